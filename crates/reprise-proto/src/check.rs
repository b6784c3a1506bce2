//! Validation of a replay config memfd's bytes before the runtime uses them: every index and
//! every list it names lies inside the buffer, with no arithmetic overflow. Pure and total (no
//! panic on any bytes), so it is fuzzed in `tests/fuzz.rs` with arbitrary input.

use crate::*;
use core::mem::{offset_of, size_of};

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    Some(u64::from_ne_bytes(s.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_ne_bytes(s.try_into().ok()?))
}

/// Whether `len` items of `size` bytes at the 8-aligned offset `off` fit in `total` bytes.
fn within(total: usize, off: u64, len: u64, size: usize) -> bool {
    off.is_multiple_of(8)
        && len
            .checked_mul(size as u64)
            .and_then(|n| off.checked_add(n))
            .is_some_and(|end| end <= total as u64)
}

/// Check a config memfd's contents: header magic and version, stripes and checkpoint
/// interval, and in replay mode every stripe and thread index and the model log in bounds.
pub fn check_config(b: &[u8]) -> Result<(), &'static str> {
    let field = |off: usize| u64_at(b, off).ok_or("config too small");
    let field32 = |off: usize| u32_at(b, off).ok_or("config too small");
    if b.len() < size_of::<ConfigHeader>() {
        return Err("config too small");
    }
    if field(offset_of!(ConfigHeader, magic))? != CONFIG_MAGIC
        || field32(offset_of!(ConfigHeader, version))? != PROTO_VERSION
    {
        return Err("config of another reprise version");
    }
    if field32(offset_of!(ConfigHeader, stripes))? as usize != STRIPES
        || field(offset_of!(ConfigHeader, checkpoint_interval))? == 0
    {
        return Err("config stripes or checkpoint interval invalid");
    }
    if field32(offset_of!(ConfigHeader, mode))? != Mode::Replay as u32 {
        return Ok(());
    }
    let nthreads = field32(offset_of!(ConfigHeader, nthreads))?;
    let sidx = field(offset_of!(ConfigHeader, stripe_index_off))?;
    let tidx = field(offset_of!(ConfigHeader, thread_index_off))?;
    if nthreads as usize > MAX_THREADS
        || !within(b.len(), sidx, STRIPES as u64, size_of::<StripeIndex>())
        || !within(b.len(), tidx, nthreads as u64, size_of::<ThreadIndex>())
    {
        return Err("config index out of bounds");
    }
    for s in 0..STRIPES {
        let at = sidx as usize + s * size_of::<StripeIndex>();
        let off = field(at + offset_of!(StripeIndex, off))?;
        let len = field(at + offset_of!(StripeIndex, len))?;
        if !within(b.len(), off, len, size_of::<VecEntry>()) {
            return Err("access vector out of bounds");
        }
    }
    for t in 0..nthreads as usize {
        let at = tidx as usize + t * size_of::<ThreadIndex>();
        let f = |o: usize| field(at + o);
        for (o, l) in THREAD_PAIR_LISTS {
            if !within(b.len(), f(o)?, f(l)?, size_of::<Pair>()) {
                return Err("thread records out of bounds");
            }
        }
        // Input data: bytes, at any offset.
        let (off, len) = (
            f(offset_of!(ThreadIndex, data_off))?,
            f(offset_of!(ThreadIndex, data_len))?,
        );
        if off.checked_add(len).is_none_or(|e| e > b.len() as u64) {
            return Err("thread records out of bounds");
        }
    }
    let (moff, mlen) = (
        field(offset_of!(ConfigHeader, model_off))?,
        field(offset_of!(ConfigHeader, model_len))?,
    );
    if mlen != 0 && moff.checked_add(mlen).is_none_or(|e| e > b.len() as u64) {
        return Err("model log out of bounds");
    }
    Ok(())
}
