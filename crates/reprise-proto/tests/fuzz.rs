//! Fuzz targets (proptest): the replay config decoder (`check_config`, which the runtime runs
//! on the config memfd before using any offset in it) and the launcher's frame decoder, on
//! arbitrary bytes and on a valid replay config with random fields overwritten. Neither
//! panics; a config it accepts has every list inside the buffer.

use core::mem::{offset_of, size_of};
use proptest::prelude::*;
use reprise_proto::*;

fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}
fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}
fn get64(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}
fn get32(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}

/// A valid replay config: header, every stripe index empty, `n` threads with one digest each.
fn valid_config(n: u32) -> Vec<u8> {
    let ConfigLayout {
        stripe_index_off: sidx,
        thread_index_off: tidx,
        data_off: data,
    } = ConfigLayout::new(n);
    let mut b = vec![0u8; data + n as usize * size_of::<Pair>()];
    put64(&mut b, offset_of!(ConfigHeader, magic), CONFIG_MAGIC);
    put32(&mut b, offset_of!(ConfigHeader, version), PROTO_VERSION);
    put32(&mut b, offset_of!(ConfigHeader, mode), Mode::Replay as u32);
    put64(&mut b, offset_of!(ConfigHeader, checkpoint_interval), 4096);
    put32(&mut b, offset_of!(ConfigHeader, stripes), STRIPES as u32);
    put32(&mut b, offset_of!(ConfigHeader, nthreads), n);
    put64(
        &mut b,
        offset_of!(ConfigHeader, stripe_index_off),
        sidx as u64,
    );
    put64(
        &mut b,
        offset_of!(ConfigHeader, thread_index_off),
        tidx as u64,
    );
    for s in 0..STRIPES {
        put64(&mut b, sidx + s * size_of::<StripeIndex>(), data as u64);
    }
    for t in 0..n as usize {
        let at = tidx + t * size_of::<ThreadIndex>();
        let p = (data + t * size_of::<Pair>()) as u64;
        for o in [
            offset_of!(ThreadIndex, results_off),
            offset_of!(ThreadIndex, signals_off),
            offset_of!(ThreadIndex, edges_off),
            offset_of!(ThreadIndex, data_off),
        ] {
            put64(&mut b, at + o, p);
        }
        put64(&mut b, at + offset_of!(ThreadIndex, digests_off), p);
        put64(&mut b, at + offset_of!(ThreadIndex, digests_len), 1);
    }
    b
}

/// Independent restatement of what an accepted config guarantees (u128: no overflow here).
fn all_in_bounds(b: &[u8]) -> bool {
    let n = get32(b, offset_of!(ConfigHeader, nthreads)) as u128;
    let tidx = get64(b, offset_of!(ConfigHeader, thread_index_off)) as u128;
    let sidx = get64(b, offset_of!(ConfigHeader, stripe_index_off)) as u128;
    let len = b.len() as u128;
    if tidx + n * size_of::<ThreadIndex>() as u128 > len
        || sidx + (STRIPES * size_of::<StripeIndex>()) as u128 > len
    {
        return false;
    }
    for s in 0..STRIPES {
        let at = sidx as usize + s * size_of::<StripeIndex>();
        if get64(b, at) as u128 + get64(b, at + 8) as u128 * size_of::<VecEntry>() as u128 > len {
            return false;
        }
    }
    let pair = size_of::<Pair>() as u128;
    for t in 0..n as usize {
        let at = tidx as usize + t * size_of::<ThreadIndex>();
        for (o, l) in THREAD_PAIR_LISTS {
            if get64(b, at + o) as u128 + get64(b, at + l) as u128 * pair > len {
                return false;
            }
        }
        let (o, l) = (
            offset_of!(ThreadIndex, data_off),
            offset_of!(ThreadIndex, data_len),
        );
        if get64(b, at + o) as u128 + get64(b, at + l) as u128 > len {
            return false;
        }
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn config_decoder_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = check_config(&bytes);
    }

    #[test]
    fn config_decoder_on_damaged_valid_configs(
        n in 0u32..4,
        edits in proptest::collection::vec((any::<usize>(), any::<u64>()), 1..4),
        cut in any::<Option<usize>>(),
    ) {
        let mut b = valid_config(n);
        prop_assert!(check_config(&b).is_ok());
        // Overwrite 8-byte words of the header and indexes (where offsets live).
        let tidx_end = ConfigLayout::new(n).data_off;
        for (at, v) in edits {
            let at = (at % tidx_end) & !7;
            if at + 8 <= b.len() {
                put64(&mut b, at, v);
            }
        }
        if let Some(c) = cut {
            let c = c % (b.len() + 1);
            b.truncate(c);
        }
        if check_config(&b).is_ok() && get32(&b, offset_of!(ConfigHeader, mode)) == Mode::Replay as u32 {
            prop_assert!(all_in_bounds(&b), "an accepted config points outside itself");
        }
    }

    #[test]
    fn frame_decoder_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok((_, used)) = decode_frames(&bytes) {
            prop_assert!(used <= bytes.len());
        }
    }
}

#[test]
fn the_valid_config_is_accepted_and_a_wrapping_offset_is_not() {
    let mut b = valid_config(2);
    assert_eq!(check_config(&b), Ok(()));
    let tidx = get64(&b, offset_of!(ConfigHeader, thread_index_off)) as usize;
    // data_off + data_len wraps around u64: the runtime used to add them unchecked.
    put64(&mut b, tidx + offset_of!(ThreadIndex, data_off), 8);
    put64(
        &mut b,
        tidx + offset_of!(ThreadIndex, data_len),
        u64::MAX - 4,
    );
    assert!(check_config(&b).is_err());
}

/// [`THREAD_PAIR_LISTS`], which `check_config` and [`all_in_bounds`] both walk, names every
/// (offset, count) field of [`ThreadIndex`]: the rest is the input data's pair and the final
/// event count, so a list added to the index and not to the table fails here.
#[test]
fn the_pair_lists_cover_the_thread_index() {
    let listed = THREAD_PAIR_LISTS.len() * 2 * size_of::<u64>();
    let data = 2 * size_of::<u64>();
    let final_events = size_of::<u64>();
    assert_eq!(listed + data + final_events, size_of::<ThreadIndex>());
    let mut fields: Vec<usize> = THREAD_PAIR_LISTS
        .iter()
        .flat_map(|&(o, l)| [o, l])
        .collect();
    fields.extend([
        offset_of!(ThreadIndex, data_off),
        offset_of!(ThreadIndex, data_len),
        offset_of!(ThreadIndex, final_events),
    ]);
    fields.sort_unstable();
    fields.dedup();
    assert_eq!(fields.len() * size_of::<u64>(), size_of::<ThreadIndex>());
}
