//! The real libc functions behind the ones the runtime interposes, found with
//! `dlsym(RTLD_NEXT)`, and `dlvsym(..., "GLIBC_2.3.2")` for condition variables (the
//! unversioned lookup may return the old 2.2.5 ABI). `memcpy`, `memmove`, `memset`, `memcmp`
//! and `bcmp`, and the string functions ([`strs`]), come from the linker's `--wrap`
//! (`__real_memcpy` ...), so they never go through `dlsym`.
#![allow(unsafe_code)]
#![allow(non_upper_case_globals)]

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};
use libc::{
    pthread_attr_t, pthread_barrier_t, pthread_cond_t, pthread_mutex_t, pthread_rwlock_t,
    pthread_t, sem_t, timespec,
};

type StartFn = extern "C" fn(*mut c_void) -> *mut c_void;

macro_rules! reals {
    ($( $name:ident ( $($arg:ident : $t:ty),* ) -> $r:ty = $sym:literal $(, $ver:literal)? ;)*) => {
        mod slots {
            use core::sync::atomic::AtomicUsize;
            $( #[allow(non_upper_case_globals)] pub static $name: AtomicUsize = AtomicUsize::new(0); )*
        }
        $(
            /// Call the real function of this name.
            ///
            /// # Safety
            /// The libc function's own contract.
            #[inline(always)]
            pub unsafe fn $name($($arg: $t),*) -> $r {
                let mut p = slots::$name.load(Ordering::Relaxed);
                if p == 0 {
                    resolve_one(&slots::$name, concat!($sym, "\0"), reals!(@ver $($ver)?));
                    p = slots::$name.load(Ordering::Relaxed);
                }
                // SAFETY: p is the address dlsym returned for this symbol, whose C type is
                // the one declared here.
                let f: unsafe extern "C" fn($($t),*) -> $r = unsafe { core::mem::transmute(p) };
                unsafe { f($($arg),*) }
            }
        )*
    };
    (@ver) => { None };
    (@ver $v:literal) => { Some(concat!($v, "\0")) };
}

reals! {
    pthread_create(t: *mut pthread_t, a: *const pthread_attr_t, f: StartFn, arg: *mut c_void) -> c_int = "pthread_create";
    pthread_join(t: pthread_t, r: *mut *mut c_void) -> c_int = "pthread_join";
    pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int = "pthread_mutex_lock";
    pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int = "pthread_mutex_trylock";
    pthread_mutex_timedlock(m: *mut pthread_mutex_t, ts: *const timespec) -> c_int = "pthread_mutex_timedlock";
    pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int = "pthread_mutex_unlock";
    pthread_cond_signal(c: *mut pthread_cond_t) -> c_int = "pthread_cond_signal", "GLIBC_2.3.2";
    pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int = "pthread_cond_broadcast", "GLIBC_2.3.2";
    pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int = "pthread_rwlock_rdlock";
    pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int = "pthread_rwlock_wrlock";
    pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int = "pthread_rwlock_tryrdlock";
    pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int = "pthread_rwlock_trywrlock";
    pthread_rwlock_timedrdlock(l: *mut pthread_rwlock_t, ts: *const timespec) -> c_int = "pthread_rwlock_timedrdlock";
    pthread_rwlock_timedwrlock(l: *mut pthread_rwlock_t, ts: *const timespec) -> c_int = "pthread_rwlock_timedwrlock";
    pthread_rwlock_clockrdlock(l: *mut pthread_rwlock_t, clk: libc::clockid_t, ts: *const timespec) -> c_int = "pthread_rwlock_clockrdlock";
    pthread_rwlock_clockwrlock(l: *mut pthread_rwlock_t, clk: libc::clockid_t, ts: *const timespec) -> c_int = "pthread_rwlock_clockwrlock";
    pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int = "pthread_rwlock_unlock";
    pthread_spin_lock(l: *mut c_int) -> c_int = "pthread_spin_lock";
    pthread_spin_trylock(l: *mut c_int) -> c_int = "pthread_spin_trylock";
    pthread_spin_unlock(l: *mut c_int) -> c_int = "pthread_spin_unlock";
    pthread_barrier_wait(b: *mut pthread_barrier_t) -> c_int = "pthread_barrier_wait";
    pthread_once(o: *mut c_int, f: extern "C" fn()) -> c_int = "pthread_once";
    sem_wait(s: *mut sem_t) -> c_int = "sem_wait";
    sem_trywait(s: *mut sem_t) -> c_int = "sem_trywait";
    sem_post(s: *mut sem_t) -> c_int = "sem_post";
    munmap(a: *mut c_void, n: usize) -> c_int = "munmap";
    sched_yield() -> c_int = "sched_yield";
    pthread_mutex_clocklock(m: *mut pthread_mutex_t, clk: libc::clockid_t, ts: *const timespec) -> c_int = "pthread_mutex_clocklock";
    pthread_tryjoin_np(t: pthread_t, r: *mut *mut c_void) -> c_int = "pthread_tryjoin_np";
    pthread_kill(t: pthread_t, sig: c_int) -> c_int = "pthread_kill";
    __cxa_guard_acquire(g: *mut u64) -> c_int = "__cxa_guard_acquire";
    __cxa_guard_release(g: *mut u64) -> () = "__cxa_guard_release";
    __cxa_guard_abort(g: *mut u64) -> () = "__cxa_guard_abort";
}

extern "C" {
    /// libc's memcpy, provided by `ld --wrap=memcpy`.
    pub fn __real_memcpy(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void;
    /// libc's memmove, provided by `ld --wrap=memmove`.
    pub fn __real_memmove(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void;
    /// libc's memset, provided by `ld --wrap=memset`.
    pub fn __real_memset(d: *mut c_void, c: c_int, n: usize) -> *mut c_void;
    /// libc's memcmp, provided by `ld --wrap=memcmp`.
    pub fn __real_memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int;
    /// libc's bcmp, provided by `ld --wrap=bcmp`.
    pub fn __real_bcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int;
}

/// libc's string functions, provided by `ld --wrap` (the ordered ones are in `strfns`).
pub mod strs {
    use core::ffi::{c_char, c_int, c_void};
    extern "C" {
        /// libc's strlen.
        pub fn __real_strlen(s: *const c_char) -> usize;
        /// libc's strnlen.
        pub fn __real_strnlen(s: *const c_char, max: usize) -> usize;
        /// libc's strcmp.
        pub fn __real_strcmp(a: *const c_char, b: *const c_char) -> c_int;
        /// libc's strncmp.
        pub fn __real_strncmp(a: *const c_char, b: *const c_char, n: usize) -> c_int;
        /// libc's strcpy.
        pub fn __real_strcpy(d: *mut c_char, s: *const c_char) -> *mut c_char;
        /// libc's stpcpy.
        pub fn __real_stpcpy(d: *mut c_char, s: *const c_char) -> *mut c_char;
        /// libc's strncpy.
        pub fn __real_strncpy(d: *mut c_char, s: *const c_char, n: usize) -> *mut c_char;
        /// libc's strcat.
        pub fn __real_strcat(d: *mut c_char, s: *const c_char) -> *mut c_char;
        /// libc's strncat.
        pub fn __real_strncat(d: *mut c_char, s: *const c_char, n: usize) -> *mut c_char;
        /// libc's strchr.
        pub fn __real_strchr(s: *const c_char, c: c_int) -> *mut c_char;
        /// libc's strrchr.
        pub fn __real_strrchr(s: *const c_char, c: c_int) -> *mut c_char;
        /// libc's strdup.
        pub fn __real_strdup(s: *const c_char) -> *mut c_char;
        /// libc's strcasecmp.
        pub fn __real_strcasecmp(a: *const c_char, b: *const c_char) -> c_int;
        /// libc's strncasecmp.
        pub fn __real_strncasecmp(a: *const c_char, b: *const c_char, n: usize) -> c_int;
        /// libc's memchr.
        pub fn __real_memchr(s: *const c_void, c: c_int, n: usize) -> *mut c_void;
        /// libc's memrchr.
        pub fn __real_memrchr(s: *const c_void, c: c_int, n: usize) -> *mut c_void;
        /// libc's strspn.
        pub fn __real_strspn(s: *const c_char, accept: *const c_char) -> usize;
        /// libc's strcspn.
        pub fn __real_strcspn(s: *const c_char, reject: *const c_char) -> usize;
        /// libc's strpbrk.
        pub fn __real_strpbrk(s: *const c_char, accept: *const c_char) -> *mut c_char;
        /// libc's strstr.
        pub fn __real_strstr(h: *const c_char, needle: *const c_char) -> *mut c_char;
    }
}

/// Find one real function (lazily, on its first call).
fn resolve_one(slot: &AtomicUsize, sym: &str, ver: Option<&str>) {
    if slot.load(Ordering::Relaxed) != 0 {
        return;
    }
    // dlsym writes random words over dead stack (`calls::reprise_fold_pending` says why).
    crate::calls::reprise_fold_pending();
    // SAFETY: sym and ver are NUL-terminated literals; RTLD_NEXT names the objects after ours.
    let p = unsafe {
        match ver {
            Some(v) => libc::dlvsym(libc::RTLD_NEXT, sym.as_ptr().cast(), v.as_ptr().cast()),
            None => libc::dlsym(libc::RTLD_NEXT, sym.as_ptr().cast()),
        }
    };
    if p.is_null() {
        crate::say!("cannot find the real {}", &sym[..sym.len() - 1]);
        crate::sys::exit_group(125);
    }
    slot.store(p as usize, Ordering::Relaxed);
}
