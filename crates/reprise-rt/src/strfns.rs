//! The string functions the program's own objects call (`ld --wrap`, `cc::WRAPPED` in the
//! launcher): libc's own read and write the bytes with no callback, so a string one thread
//! reads while another writes it was read out of the recorded order. mafft compares a shared
//! string with `strcmp` while another thread `strcpy`s into it under a lock: replays diverged.
//!
//! Each function is done here a chunk at a time. A chunk ends at the next 64-byte boundary
//! (one ownership granule, never across a page: reading past a string's end inside its chunk
//! cannot fault, as libc's own vector loops rely on too). Its ranged read's callback comes
//! first, then its bytes are copied out before the next callback: a callback that enters the
//! runtime is a safe point, where the thread may hand the granules it read over. Writes are a
//! ranged write's callback, then the store. Which chunks a call reads depends only on the
//! bytes it read before, so a replay that reads the same values makes the same callbacks.
//!
//! `strstr` keeps a window of the haystack (`search`). In sync mode and inside the runtime (its
//! own formatting, `CStr`) they are libc's.
#![allow(unsafe_code)]

use crate::memfns::ordered;
use crate::real::{__real_memcpy, __real_memmove, strs as real};
use crate::tsan::{__tsan_read_range, __tsan_write_range};
use core::ffi::{c_char, c_int, c_void};
use core::mem::MaybeUninit;
use core::sync::atomic::{compiler_fence, Ordering};

/// The chunk: one ownership granule.
const CHUNK: usize = 1 << crate::ownership::GRANULE_SHIFT;

/// One chunk's bytes, copied out right after its callback.
type Buf = MaybeUninit<[u8; CHUNK]>;

/// Copy the chunk at `p`, at most `max` bytes, into `buf` right after its read callback;
/// returns its length (at least 1 when `max` is).
///
/// # Safety
/// `p` readable up to its chunk's end or `max` bytes, whichever is first (a string whose end
/// has not been seen yet, or a bound the caller's contract gives).
unsafe fn take(p: *const c_char, max: usize, buf: &mut Buf) -> usize {
    let k = (CHUNK - (p as usize & (CHUNK - 1))).min(max);
    __tsan_read_range(p as *mut c_void, k);
    // The bytes are read after the callback (it may be inlined: nothing else orders them).
    compiler_fence(Ordering::SeqCst);
    // SAFETY: per the contract, `p` holds `k` readable bytes; `buf` holds CHUNK >= k.
    unsafe { __real_memcpy(buf.as_mut_ptr().cast(), p.cast(), k) };
    k
}

/// The first `k` bytes [`take`] copied.
fn bytes(buf: &Buf, k: usize) -> &[u8] {
    // SAFETY: `take` wrote the first `k <= CHUNK` bytes.
    unsafe { core::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), k) }
}

/// Store `n` bytes of `src` at `d` right after their write callback.
///
/// # Safety
/// `d` writable and `src` readable for `n` bytes.
unsafe fn put(d: *mut c_char, src: *const u8, n: usize) {
    if n == 0 {
        return;
    }
    __tsan_write_range(d.cast(), n);
    compiler_fence(Ordering::SeqCst);
    // SAFETY: per the contract.
    unsafe { __real_memcpy(d.cast(), src.cast(), n) };
}

/// The length of `s`, at most `max`.
///
/// # Safety
/// `s` a string, or readable for `max` bytes.
unsafe fn length(s: *const c_char, max: usize) -> usize {
    let mut buf = Buf::uninit();
    let mut n = 0;
    while n < max {
        // SAFETY: the string continues (no NUL yet) and `max` bounds it.
        let k = unsafe { take(s.add(n), max - n, &mut buf) };
        if let Some(j) = bytes(&buf, k).iter().position(|&b| b == 0) {
            return n + j;
        }
        n += k;
    }
    max
}

/// Copy `s` to `d`, at most `max` bytes, stopping after its NUL; returns how many bytes it
/// copied before the NUL, and whether it copied the NUL.
///
/// # Safety
/// `s` a string or readable for `max` bytes; `d` writable for what is copied.
unsafe fn copy(d: *mut c_char, s: *const c_char, max: usize) -> (usize, bool) {
    let mut buf = Buf::uninit();
    let mut n = 0;
    while n < max {
        // SAFETY: as in `length`.
        let k = unsafe { take(s.add(n), max - n, &mut buf) };
        let nul = bytes(&buf, k).iter().position(|&b| b == 0);
        let m = nul.map_or(k, |j| j + 1);
        // SAFETY: `d` receives the string's bytes (the caller's contract).
        unsafe { put(d.add(n), buf.as_ptr().cast(), m) };
        if let Some(j) = nul {
            return (n + j, true);
        }
        n += k;
    }
    (max, false)
}

/// A byte as `strcmp` compares it.
fn plain(c: u8) -> c_int {
    c as c_int
}

/// A byte as `strcasecmp` compares it (the locale's lower case, as libc's).
fn lower(c: u8) -> c_int {
    // SAFETY: `tolower` of a value in 0..=255 (libc's table look-up).
    unsafe { libc::tolower(c as c_int) }
}

/// Compare `a` and `b`, at most `max` bytes, as `strncmp` (`strncasecmp` with [`lower`]).
///
/// # Safety
/// `a` and `b` strings or readable for `max` bytes.
unsafe fn compare(a: *const c_char, b: *const c_char, max: usize, fold: fn(u8) -> c_int) -> c_int {
    let (mut x, mut y) = (Buf::uninit(), Buf::uninit());
    let mut n = 0;
    while n < max {
        let lim = (CHUNK - (b as usize + n) % CHUNK).min(max - n);
        // SAFETY: neither string has ended before `n`; the chunks end at their own boundaries.
        let k = unsafe { take(a.add(n), lim, &mut x) };
        // SAFETY: as above (`k <= lim` stays within b's chunk).
        unsafe { take(b.add(n), k, &mut y) };
        for (&c, &d) in bytes(&x, k).iter().zip(bytes(&y, k)) {
            let (c, d) = (fold(c), fold(d));
            if c != d {
                return c - d;
            }
            if c == 0 {
                return 0;
            }
        }
        n += k;
    }
    0
}

/// The first `c` in `s` (its NUL when `c` is 0), or the last one when `last`; null if none.
///
/// # Safety
/// `s` a string.
unsafe fn find(s: *const c_char, c: c_int, last: bool) -> *mut c_char {
    let c = c as u8;
    let mut buf = Buf::uninit();
    let mut found = core::ptr::null_mut();
    let mut n = 0;
    loop {
        // SAFETY: the string continues.
        let k = unsafe { take(s.add(n), usize::MAX, &mut buf) };
        for (j, &b) in bytes(&buf, k).iter().enumerate() {
            if b == c {
                found = s.wrapping_add(n + j) as *mut c_char;
                if !last {
                    return found;
                }
            }
            if b == 0 {
                return found;
            }
        }
        n += k;
    }
}

/// The first byte `c` among the `n` bytes at `s` (the last one when `last`); null if none.
///
/// # Safety
/// `s` readable for `n` bytes.
unsafe fn find_in(s: *const c_void, c: c_int, n: usize, last: bool) -> *mut c_void {
    let (s, c) = (s.cast::<c_char>(), c as u8);
    let mut buf = Buf::uninit();
    let mut found = core::ptr::null_mut();
    let mut i = 0;
    while i < n {
        // SAFETY: within the caller's `n` bytes.
        let k = unsafe { take(s.add(i), n - i, &mut buf) };
        let b = bytes(&buf, k);
        let hit = if last {
            b.iter().rposition(|&x| x == c)
        } else {
            b.iter().position(|&x| x == c)
        };
        if let Some(j) = hit {
            found = s.wrapping_add(i + j) as *mut c_void;
            if !last {
                return found;
            }
        }
        i += k;
    }
    found
}

/// The bytes of string `set`, as a 256-bit map (never its NUL).
///
/// # Safety
/// `set` a string.
unsafe fn byte_set(set: *const c_char) -> [u64; 4] {
    let mut m = [0u64; 4];
    let mut buf = Buf::uninit();
    let mut n = 0;
    loop {
        // SAFETY: the string continues.
        let k = unsafe { take(set.add(n), usize::MAX, &mut buf) };
        for &b in bytes(&buf, k) {
            if b == 0 {
                return m;
            }
            m[usize::from(b >> 6)] |= 1 << (b & 63);
        }
        n += k;
    }
}

/// The length of the run at the start of `s` of bytes in `set` (`inside`) or not in it, and
/// the byte that ended it (its NUL at the latest).
///
/// # Safety
/// `s` a string.
unsafe fn span(s: *const c_char, set: &[u64; 4], inside: bool) -> (usize, u8) {
    let mut buf = Buf::uninit();
    let mut n = 0;
    loop {
        // SAFETY: the string continues.
        let k = unsafe { take(s.add(n), usize::MAX, &mut buf) };
        for (j, &b) in bytes(&buf, k).iter().enumerate() {
            let member = set[usize::from(b >> 6)] & (1 << (b & 63)) != 0;
            if b == 0 || member != inside {
                return (n + j, b);
            }
        }
        n += k;
    }
}

/// Room for a needle and a window of the haystack on the stack; longer needles go to the heap.
const ROOM: usize = 512;

/// The first occurrence of string `needle` in string `h`, as `strstr`. The needle is copied
/// (its length first, then its bytes, each chunk after its callback), then the haystack is
/// read forward a chunk at a time into a window that keeps the needle's length less one of
/// the bytes before it, searched with libc's `memmem` (the window is the runtime's own): it
/// stops at the first match, as libc's does.
///
/// # Safety
/// `h` and `needle` strings.
unsafe fn search(h: *const c_char, needle: *const c_char) -> *mut c_char {
    // SAFETY: a string.
    let m = unsafe { length(needle, usize::MAX) };
    if m == 0 {
        return h as *mut c_char;
    }
    let need = 2 * m - 1 + CHUNK;
    // Uninitialised: zeroing it would be a `memset` call, the wrapped one (a callback on the
    // runtime's own buffer), as would any copy not made with the real functions.
    let mut stack = MaybeUninit::<[u8; ROOM]>::uninit();
    let room = if need <= ROOM {
        stack.as_mut_ptr().cast::<u8>()
    } else {
        crate::heap::malloc(need).cast::<u8>()
    };
    if room.is_null() {
        // SAFETY: the caller's contract (out of memory: libc's, unordered, rather than none).
        return unsafe { real::__real_strstr(h, needle) };
    }
    // SAFETY: `room` holds `need` bytes: the needle (m), then the window (m - 1 + CHUNK).
    let found = unsafe {
        let mut buf = Buf::uninit();
        // The needle, again chunk by chunk (a racing writer may have shortened it: its NUL
        // then ends it; lengthened, its first `m` bytes are the needle).
        let mut got = 0;
        while got < m {
            let k = take(needle.add(got), m - got, &mut buf);
            let b = bytes(&buf, k);
            let end = b.iter().position(|&x| x == 0).unwrap_or(k);
            __real_memcpy(room.add(got).cast(), b.as_ptr().cast(), end);
            got += end;
            if end < k {
                break;
            }
        }
        search_window(h, room, got, room.add(m))
    };
    if need > ROOM {
        crate::heap::free(room.cast());
    }
    found
}

/// [`search`]'s scan of `h` for the `m` bytes at `nd`, through `win` (`m - 1 + CHUNK` bytes).
///
/// # Safety
/// `h` a string; `nd` readable for `m >= 1` bytes; `win` writable for `m - 1 + CHUNK`.
unsafe fn search_window(h: *const c_char, nd: *const u8, m: usize, win: *mut u8) -> *mut c_char {
    if m == 0 {
        return h as *mut c_char;
    }
    let mut buf = Buf::uninit();
    // `win` holds `have` bytes of `h`, from index `base`.
    let (mut have, mut base, mut n) = (0usize, 0usize, 0usize);
    loop {
        // SAFETY: the string continues.
        let k = unsafe { take(h.add(n), usize::MAX, &mut buf) };
        let b = bytes(&buf, k);
        let end = b.iter().position(|&x| x == 0).unwrap_or(k);
        // SAFETY: `have <= m - 1` before the append, `end <= CHUNK`.
        unsafe { __real_memcpy(win.add(have).cast(), b.as_ptr().cast(), end) };
        have += end;
        // SAFETY: libc's memmem over the runtime's own buffers.
        let hit = unsafe { libc::memmem(win.cast(), have, nd.cast(), m) };
        if !hit.is_null() {
            return h.wrapping_add(base + (hit as usize - win as usize)) as *mut c_char;
        }
        if end < k {
            return core::ptr::null_mut();
        }
        n += k;
        let keep = have.min(m - 1);
        // SAFETY: within `win` (memmove: the ranges may overlap).
        unsafe { __real_memmove(win.cast(), win.add(have - keep).cast(), keep) };
        base += have - keep;
        have = keep;
    }
}

macro_rules! wrap {
    ($( $(#[$doc:meta])* fn $name:ident / $real:ident ( $($a:ident : $t:ty),* ) -> $r:ty { $($body:tt)* } )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// The libc function's own contract.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $r {
            if !ordered() {
                // SAFETY: the caller's contract.
                return unsafe { real::$real($($a),*) };
            }
            // SAFETY: the caller's contract (each helper's is a part of it).
            unsafe { $($body)* }
        }
    )*};
}

wrap! {
    /// `strlen`.
    fn __wrap_strlen / __real_strlen(s: *const c_char) -> usize { length(s, usize::MAX) }
    /// `strnlen`.
    fn __wrap_strnlen / __real_strnlen(s: *const c_char, max: usize) -> usize { length(s, max) }
    /// `strcmp`.
    fn __wrap_strcmp / __real_strcmp(a: *const c_char, b: *const c_char) -> c_int {
        compare(a, b, usize::MAX, plain)
    }
    /// `strncmp`.
    fn __wrap_strncmp / __real_strncmp(a: *const c_char, b: *const c_char, n: usize) -> c_int {
        compare(a, b, n, plain)
    }
    /// `strcpy`.
    fn __wrap_strcpy / __real_strcpy(d: *mut c_char, s: *const c_char) -> *mut c_char {
        copy(d, s, usize::MAX);
        d
    }
    /// `stpcpy`: the end of the copy (its NUL).
    fn __wrap_stpcpy / __real_stpcpy(d: *mut c_char, s: *const c_char) -> *mut c_char {
        d.add(copy(d, s, usize::MAX).0)
    }
    /// `strncpy`: the rest of `d`'s `n` bytes, after the NUL copied, filled with NULs (the
    /// wrapped `memset`).
    fn __wrap_strncpy / __real_strncpy(d: *mut c_char, s: *const c_char, n: usize) -> *mut c_char {
        let (m, nul) = copy(d, s, n);
        let end = m + usize::from(nul);
        if end < n {
            crate::memfns::__wrap_memset(d.add(end).cast(), 0, n - end);
        }
        d
    }
    /// `strcat`.
    fn __wrap_strcat / __real_strcat(d: *mut c_char, s: *const c_char) -> *mut c_char {
        copy(d.add(length(d, usize::MAX)), s, usize::MAX);
        d
    }
    /// `strncat`: at most `n` bytes of `s`, then a NUL.
    fn __wrap_strncat / __real_strncat(d: *mut c_char, s: *const c_char, n: usize) -> *mut c_char {
        let end = d.add(length(d, usize::MAX));
        let (m, nul) = copy(end, s, n);
        if !nul {
            put(end.add(m), [0u8].as_ptr(), 1);
        }
        d
    }
    /// `strchr`.
    fn __wrap_strchr / __real_strchr(s: *const c_char, c: c_int) -> *mut c_char {
        find(s, c, false)
    }
    /// `strrchr`.
    fn __wrap_strrchr / __real_strrchr(s: *const c_char, c: c_int) -> *mut c_char {
        find(s, c, true)
    }
    /// `strdup`: the length, then a copy of that many bytes and a NUL (the malloc family is
    /// the runtime's own).
    fn __wrap_strdup / __real_strdup(s: *const c_char) -> *mut c_char {
        let n = length(s, usize::MAX);
        let p = crate::heap::malloc(n + 1).cast::<c_char>();
        if !p.is_null() {
            copy(p, s, n);
            put(p.add(n), [0u8].as_ptr(), 1);
        }
        p
    }
    /// `strcasecmp`.
    fn __wrap_strcasecmp / __real_strcasecmp(a: *const c_char, b: *const c_char) -> c_int {
        compare(a, b, usize::MAX, lower)
    }
    /// `strncasecmp`.
    fn __wrap_strncasecmp / __real_strncasecmp(a: *const c_char, b: *const c_char, n: usize) -> c_int {
        compare(a, b, n, lower)
    }
    /// `memchr`.
    fn __wrap_memchr / __real_memchr(s: *const c_void, c: c_int, n: usize) -> *mut c_void {
        find_in(s, c, n, false)
    }
    /// `memrchr`: every byte read, in the forward order of the others.
    fn __wrap_memrchr / __real_memrchr(s: *const c_void, c: c_int, n: usize) -> *mut c_void {
        find_in(s, c, n, true)
    }
    /// `strspn`.
    fn __wrap_strspn / __real_strspn(s: *const c_char, accept: *const c_char) -> usize {
        span(s, &byte_set(accept), true).0
    }
    /// `strcspn`.
    fn __wrap_strcspn / __real_strcspn(s: *const c_char, reject: *const c_char) -> usize {
        span(s, &byte_set(reject), false).0
    }
    /// `strpbrk`.
    fn __wrap_strpbrk / __real_strpbrk(s: *const c_char, accept: *const c_char) -> *mut c_char {
        match span(s, &byte_set(accept), false) {
            (_, 0) => core::ptr::null_mut(),
            (n, _) => s.add(n) as *mut c_char,
        }
    }
    /// `strstr`.
    fn __wrap_strstr / __real_strstr(h: *const c_char, needle: *const c_char) -> *mut c_char {
        search(h, needle)
    }
}
