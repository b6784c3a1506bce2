/* shim_names.c: the program's own definitions win.
 * Every libc name the runtime defines is weak, so a program may define its own `send`, `read`,
 * `time`, `free` ... (a function or a variable), as it may with glibc alone: its definition is
 * then the one linked, for its own code, and the runtime does not see those calls (they are
 * not libc's). The C interposers are weak (each shim_*.c file's #pragma weak list at its end:
 * the pragma must be in the translation unit that defines the name); the Rust ones are
 * exported as `reprise_<name>` and reached through the weak stubs here. */
#include "shim.h"

#define RUST_WEAK(name) \
    __asm__(".pushsection .text." #name ",\"ax\",@progbits\n" \
            ".weak " #name "\n.type " #name ",@function\n" #name ":\n" \
            "\tjmp reprise_" #name "\n" \
            ".size " #name ", .-" #name "\n.popsection\n")
RUST_WEAK(sched_yield);
RUST_WEAK(malloc);
RUST_WEAK(free);
RUST_WEAK(cfree);
RUST_WEAK(calloc);
RUST_WEAK(realloc);
RUST_WEAK(reallocarray);
RUST_WEAK(memalign);
RUST_WEAK(aligned_alloc);
RUST_WEAK(valloc);
RUST_WEAK(pvalloc);
RUST_WEAK(posix_memalign);
RUST_WEAK(malloc_usable_size);
RUST_WEAK(sigaction);
RUST_WEAK(sigprocmask);
RUST_WEAK(sysv_signal);
/* `signal` under strict standards (zstd): the same one-shot handler as sysv_signal. */
__asm__(".pushsection .text.__sysv_signal,\"ax\",@progbits\n"
        ".weak __sysv_signal\n.type __sysv_signal,@function\n__sysv_signal:\n"
        "\tjmp reprise_sysv_signal\n"
        ".size __sysv_signal, .-__sysv_signal\n.popsection\n");
RUST_WEAK(pthread_sigmask);
RUST_WEAK(signal);
RUST_WEAK(setitimer);
RUST_WEAK(alarm);
RUST_WEAK(timer_settime);
RUST_WEAK(pthread_mutex_trylock);
RUST_WEAK(pthread_mutex_timedlock);
RUST_WEAK(pthread_rwlock_rdlock);
RUST_WEAK(pthread_rwlock_wrlock);
RUST_WEAK(pthread_rwlock_tryrdlock);
RUST_WEAK(pthread_rwlock_trywrlock);
RUST_WEAK(pthread_rwlock_timedrdlock);
RUST_WEAK(pthread_rwlock_timedwrlock);
RUST_WEAK(pthread_rwlock_clockrdlock);
RUST_WEAK(pthread_rwlock_clockwrlock);
RUST_WEAK(pthread_rwlock_unlock);
RUST_WEAK(pthread_spin_lock);
RUST_WEAK(pthread_spin_trylock);
RUST_WEAK(pthread_spin_unlock);
RUST_WEAK(pthread_mutex_clocklock);
RUST_WEAK(pthread_cond_signal);
RUST_WEAK(pthread_cond_broadcast);
RUST_WEAK(pthread_barrier_wait);
RUST_WEAK(sem_trywait);
RUST_WEAK(sem_post);
RUST_WEAK(pthread_create);
RUST_WEAK(pthread_tryjoin_np);
RUST_WEAK(pthread_kill);
RUST_WEAK(__cxa_guard_acquire);
RUST_WEAK(__cxa_guard_release);
RUST_WEAK(__cxa_guard_abort);
RUST_WEAK(munmap);

