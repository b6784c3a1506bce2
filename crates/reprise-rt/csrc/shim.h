/* shim.h: what the C interposers share. They are easier in C than in Rust (variadic functions,
 * and long lists of "take a turn, then call the real function" wrappers), one file per concern:
 * shim_stdio.c (stdio and the libc RNG, ordered per object), shim_process.c (clocks and identity
 * as recorded results, syscall(), starting other programs), shim_fdio.c (reads and writes on
 * file descriptors, getrandom), shim_fdalloc.c (descriptor allocation: close, open, pipes,
 * duplicates, placeholders), shim_copy.c (copies the kernel makes between
 * descriptors, file-cloning ioctls), shim_sysinfo.c (memory, processors, CPU affinity and
 * limits as recorded results), shim_omp.c (OpenMP's locks, ordered like mutexes), shim_fs.c (changes to the file system besides
 * writes: revocable; path status calls: recorded), shim_net.c (sockets, poll, select, epoll),
 * shim_threads.c (thread start and end, cancellation points, blocking waits, the unwinder's own
 * calls), shim_child.c (fork children: their pids, the wait family, the pipes they write), shim_names.c (the weak stubs in front of the Rust interposers) and shim_dl.c (dlopen:
 * libraries the program loads itself, reported to the launcher).
 *
 * Why these exist (glibc-internal locks are invisible to interposition): stdio streams and the libc
 * random-number state are protected by glibc-internal locks the runtime cannot see, so two
 * threads' printf or rand() calls would interleave differently in replay. Each call here is an
 * ordered event on the stripe of its object (the FILE, or the libc RNG state), so replay
 * reproduces the recorded order. Clock and process-identity reads are recorded results, given
 * back in replay.
 *
 * Every real function is found with dlsym(RTLD_NEXT) on first use.
 *
 * Names: every libc name a shim file defines is weak (its `#pragma weak` list, which must stay in
 * the file that defines the name; shim_names.c says why). What the files share and that is not
 * a libc name is `reprise_shim_*`, hidden: it never leaves the runtime's .so and cannot clash
 * with a name of the program's. */
#ifndef REPRISE_SHIM_H
#define REPRISE_SHIM_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <sys/time.h>
#include <sys/times.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <errno.h>
#include <pthread.h>

#define SHIM_HIDDEN __attribute__((visibility("hidden")))

/* A spin lock for the shims' own small tables (held for a short walk, never across a call
 * that may block; the program never sees it). */
static inline void shim_lock(int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) __builtin_ia32_pause();
}
static inline void shim_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

/* Provided by the Rust runtime. */
extern int reprise_ordered(const void *obj);   /* safe point + turn on obj's stripe; 0 if off */
extern void reprise_safe_point(void);
extern uint64_t reprise_input(uint64_t live);   /* record: logs live; replay: recorded value */
/* reprise_input for the result of a call made before the entry: the signals due there are
 * delivered after the result is logged (entry.rs, enter_result_first). */
extern uint64_t reprise_call_result(uint64_t live);
extern int reprise_active(void);                /* 1 while recording or replaying this thread */

/* The pending access's value is folded before the first dlsym, whose __sigsetjmp writes
 * random words over dead stack (calls.rs, reprise_fold_pending). */
extern void reprise_fold_pending(void);
#define REAL(ret, name, params) \
    static ret(*real_##name) params; \
    if (!real_##name) { reprise_fold_pending(); real_##name = (ret(*) params)dlsym(RTLD_NEXT, #name); }

/* The runtime's own system calls, by number: the program may define its own `fstat`, `dup2` or
 * `syscall` (see shim_names.c), and those must not be the ones called here. */
static inline long raw_syscall3(long n, long a1, long a2, long a3)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2), "d"(a3) : "rcx", "r11", "memory");
    return r;
}
#define RAW_FSTAT(fd, st) (raw_syscall3(SYS_fstat, (fd), (long)(st), 0) == 0 ? 0 : -1)
#define RAW_FSTATFS(fd, st) (raw_syscall3(SYS_fstatfs, (fd), (long)(st), 0) == 0 ? 0 : -1)
#define RAW_DUP2(a, b) raw_syscall3(SYS_dup2, (a), (b), 0)

/* ---- cancellation points (cancel.rs; shim_threads.c says why, and defines these) ---------- */
extern int reprise_cancel_point(void);
extern void reprise_cancelled(pthread_mutex_t *relock);
extern void reprise_cancel_exit(void);
extern void reprise_cancel_unseen(void);

/* Defined in shim_threads.c, which says what each is. */
extern __thread int reprise_shim_exit_seen SHIM_HIDDEN;
__attribute__((noreturn)) SHIM_HIDDEN void reprise_shim_cancel_now(void);
#define CANCEL_POINT() do { if (reprise_cancel_point()) reprise_shim_cancel_now(); } while (0)

/* Record: `stmt` makes a real call that is a cancellation point; if the thread is cancelled in
 * it, the cleanup runs during the unwind and logs where (relock: a condition wait's mutex). */
struct cancel_guard { int armed; pthread_mutex_t *relock; };
SHIM_HIDDEN void reprise_shim_cancel_cleanup(struct cancel_guard *g);
#define CANCELLABLE(relock, stmt) \
    do { \
        struct cancel_guard cg_ __attribute__((cleanup(reprise_shim_cancel_cleanup))) = {1, (relock)}; \
        stmt; \
        cg_.armed = 0; \
    } while (0)

/* ---- file descriptors (shim_fdio.c) ------------------------------------------------------- */
extern int reprise_fd_event(int fd);
extern int reprise_io_replaying(void);
extern uint64_t reprise_io_check(uint64_t live, const char *what);
extern void reprise_io_data(void *buf, size_t len);

/* Defined in shim_fdio.c and shim_fdalloc.c, which say what each is. */
extern char reprise_shim_fd_alloc_obj SHIM_HIDDEN;
SHIM_HIDDEN long reprise_shim_io_result(long r, int err);
SHIM_HIDDEN void reprise_shim_note_input(int fd);
/* Remember that the program wrote the regular file open on `fd` (its later reads are then
 * recorded, not re-executed: shim_fdio.c). */
SHIM_HIDDEN void reprise_shim_mark_written(int fd);
struct stat;
SHIM_HIDDEN int reprise_shim_wrote(const struct stat *st);
SHIM_HIDDEN int reprise_shim_placeholder(int want);
/* Children and their pipes (shim_child.c, which says what each is). */
SHIM_HIDDEN void reprise_shim_pipe_made(const int p[2]);
SHIM_HIDDEN void reprise_shim_pipe_written(const struct stat *st);
/* What a read of a pipe reads (shim_child.c, reprise_shim_pipe_reads). */
enum { PIPE_OWN = 0, PIPE_FROM_CHILD = 1, PIPE_SHARED = 2 };
SHIM_HIDDEN int reprise_shim_pipe_reads(const struct stat *st);
SHIM_HIDDEN void reprise_shim_pipe_to_child(int wfd);
SHIM_HIDDEN int reprise_shim_feeds_child(const struct stat *st);
SHIM_HIDDEN void reprise_shim_drain_how(int fd, void *scratch, size_t cap, long want, int wait);
SHIM_HIDDEN pid_t reprise_shim_child_made(pid_t real);
SHIM_HIDDEN pid_t reprise_shim_child_real(pid_t pid);
/* Replay: the thread's next recorded result, not taken, without a runtime entry (calls.rs). */
extern uint64_t reprise_peek_result(uint64_t dflt);
/* Replay of a descriptor-allocating call: hold its turn across the entries that give back its
 * result, until the descriptor is made (calls.rs; reprise_shim_placeholder ends it). */
extern void reprise_fd_hold_begin(void);
extern void reprise_fd_hold_end(void);

/* ---- recorded results (shim_fs.c, shim_sysinfo.c, shim_omp.c) --------------------------------
 * `reprise_active`, starting the runtime first if nothing did yet (a shared library's
 * constructor may call these before the program starts it: calls.rs). */
extern int reprise_active_init(void);

/* A call that fills `out` (`size` bytes) and returns 0: performed while recording, its result,
 * errno and `out` recorded; in replay not performed, all three given back. A safe point. */
#define RECORDED_OUT(ret, name, params, args, out, size)                          \
    ret name params                                                               \
    {                                                                             \
        REAL(ret, name, params);                                                  \
        if (!reprise_active_init()) return real_##name args;                      \
        reprise_safe_point();                                                     \
        long r = -1;                                                              \
        int e = 0;                                                                \
        if (!reprise_io_replaying()) { r = (long)real_##name args; e = errno; }   \
        r = reprise_shim_io_result(r, e);                                         \
        if (r == 0) reprise_io_data((void *)(out), (size));                       \
        return (ret)r;                                                            \
    }

/* A call that returns a number: its value recorded, the recorded one given back in replay,
 * where the real call is made only when `in_replay` (for its side effects). */
#define RECORDED_VALUE(ret, name, params, args, in_replay)                        \
    ret name params                                                               \
    {                                                                             \
        REAL(ret, name, params);                                                  \
        if (!reprise_active_init()) return real_##name args;                      \
        ret v = 0;                                                                \
        if ((in_replay) || !reprise_io_replaying()) v = real_##name args;         \
        return (ret)(int64_t)reprise_input((uint64_t)(int64_t)v);                 \
    }

#endif
