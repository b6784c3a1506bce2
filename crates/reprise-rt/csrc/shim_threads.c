/* shim_threads.c: thread start and end, cancellation points and the blocking waits that are
 * ones, and the unwinder's own lock calls. */
#include "shim.h"
#include <string.h>

/* ---- cancellation points (cancel.rs; the thread section below says why; shim.h declares
 * what the other files share) ------------------------------------------------------------- */

/* The thread's unwind is one the runtime knows: pthread_exit, or a recorded/replayed
 * cancellation at one of its cancellation points. */
__thread int reprise_shim_exit_seen;

/* Replay: the recorded thread was cancelled here; end it the same way. */
void reprise_shim_cancel_now(void)
{
    REAL(void, pthread_exit, (void *));
    reprise_shim_exit_seen = 1;
    reprise_cancel_exit();
    real_pthread_exit(PTHREAD_CANCELED);
    __builtin_unreachable();
}

/* Record: the cleanup of CANCELLABLE (shim.h), run during the unwind of a cancelled real call. */
void reprise_shim_cancel_cleanup(struct cancel_guard *g)
{
    if (!g->armed) return;
    reprise_shim_exit_seen = 1;
    reprise_cancelled(g->relock);
    reprise_cancel_exit();
}

/* ---- thread start and end ---------------------------------------------------------------------
 * A thread may end by glibc's forced unwind (pthread_exit at any depth, cancellation), which runs
 * the program's cleanup handlers and C++ destructors frame by frame. Only frames with unwind
 * information may be on that path; the runtime's Rust code is built with panic=abort and its
 * frames cannot be unwound. So every recorded thread starts in this C trampoline (this file is
 * built with -fexceptions), its end is a cleanup of the trampoline's frame (it runs when the
 * start routine returns and when an unwind passes, after every handler of the program's own),
 * and every interposed call that is a cancellation point makes its real call from a C frame
 * (cancel.rs says how a cancellation is recorded and replayed). */
#include <semaphore.h>
extern void *reprise_thread_begin(void *slot, void **arg);
extern void reprise_scrub_stack(void);
extern void reprise_thread_finish(void);
extern void reprise_pthread_exit_begin(void);

struct end_guard { int returned; };
static void thread_finish_cleanup(struct end_guard *g)
{
    if (!g->returned && !reprise_shim_exit_seen) reprise_cancel_unseen();
    reprise_thread_finish();
}

void *reprise_trampoline(void *slot)
{
    void *arg;
    void *(*start)(void *) = (void *(*)(void *))reprise_thread_begin(slot, &arg);
    /* What the runtime's start of the thread left on its stack differs between record and
     * replay: zeroed before the program's frames lie over it. */
    reprise_scrub_stack();
    struct end_guard g __attribute__((cleanup(thread_finish_cleanup))) = {0};
    void *r = start(arg);
    g.returned = 1;
    return r;
}

void pthread_exit(void *r)
{
    REAL(void, pthread_exit, (void *));
    reprise_shim_exit_seen = 1;
    reprise_pthread_exit_begin();
    real_pthread_exit(r);
    __builtin_unreachable();
}

/* What the Rust `_pre` step of a blocking interposer answers (sync.rs). */
enum { PRE_NATIVE, PRE_CALL, PRE_DONE, PRE_CANCEL };

void pthread_testcancel(void)
{
    REAL(void, pthread_testcancel, (void));
    if (!reprise_active()) { real_pthread_testcancel(); return; }
    CANCEL_POINT();
    CANCELLABLE(NULL, real_pthread_testcancel());
}

/* pthread_cancel: performed while recording (the target acts at a cancellation point, which
 * records where); not performed in replay, where the target ends at the recorded point. */
int pthread_cancel(pthread_t th)
{
    REAL(int, pthread_cancel, (pthread_t));
    if (!reprise_active()) return real_pthread_cancel(th);
    reprise_safe_point();
    long r = 0;
    if (!reprise_io_replaying()) r = real_pthread_cancel(th);
    return (int)reprise_input((uint64_t)r);
}

/* Condition waits. The real functions of the current ABI (GLIBC_2.3.2, not the 2.2.5 one). */
extern int reprise_cond_wait_pre(pthread_mutex_t *m, int timed, int *out);
extern int reprise_cond_wait_post(pthread_mutex_t *m, int timed, int r);
static int cond_wait_common(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *ts, int clk)
{
    static int (*wait)(pthread_cond_t *, pthread_mutex_t *);
    static int (*timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    static int (*clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
    if (!wait) wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.3.2");
    if (!timedwait)
        timedwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
    if (!clockwait)
        clockwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *))dlsym(RTLD_NEXT, "pthread_cond_clockwait");
#define REAL_WAIT() (!ts ? wait(c, m) : clk < 0 ? timedwait(c, m, ts) : clockwait(c, m, (clockid_t)clk, ts))
    int out = 0, r;
    switch (reprise_cond_wait_pre(m, ts != NULL, &out)) {
    case PRE_NATIVE: return REAL_WAIT();
    case PRE_DONE: return out;
    case PRE_CANCEL: reprise_shim_cancel_now();
    }
    CANCELLABLE(m, r = REAL_WAIT());
#undef REAL_WAIT
    return reprise_cond_wait_post(m, ts != NULL, r);
}
int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { return cond_wait_common(c, m, NULL, -1); }
int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *ts)
{
    return cond_wait_common(c, m, ts, -1);
}
int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk, const struct timespec *ts)
{
    return cond_wait_common(c, m, ts, (int)clk);
}

/* Semaphore waits. */
extern int reprise_sem_wait_pre(sem_t *s, int *out);
extern int reprise_sem_wait_post(sem_t *s, int r);
#define SEM_WAIT(name, params, args) \
    int name params \
    { \
        REAL(int, name, params); \
        int out = 0, r; \
        switch (reprise_sem_wait_pre(s, &out)) { \
        case PRE_NATIVE: return real_##name args; \
        case PRE_DONE: return out; \
        case PRE_CANCEL: reprise_shim_cancel_now(); \
        } \
        CANCELLABLE(NULL, r = real_##name args); \
        return reprise_sem_wait_post(s, r); \
    }
SEM_WAIT(sem_wait, (sem_t *s), (s))
SEM_WAIT(sem_timedwait, (sem_t *s, const struct timespec *ts), (s, ts))
SEM_WAIT(sem_clockwait, (sem_t *s, clockid_t c, const struct timespec *ts), (s, c, ts))

/* Joins. */
extern int reprise_join_pre(pthread_t t, int timed, void **ret, int *out);
extern int reprise_join_post(pthread_t t, int timed, int r);
#define JOIN(name, params, args, timed) \
    int name params \
    { \
        REAL(int, name, params); \
        int out = 0, r; \
        switch (reprise_join_pre(t, timed, ret, &out)) { \
        case PRE_NATIVE: return real_##name args; \
        case PRE_DONE: return out; \
        case PRE_CANCEL: reprise_shim_cancel_now(); \
        } \
        CANCELLABLE(NULL, r = real_##name args); \
        return reprise_join_post(t, timed, r); \
    }
JOIN(pthread_join, (pthread_t t, void **ret), (t, ret), 0)
JOIN(pthread_timedjoin_np, (pthread_t t, void **ret, const struct timespec *ts), (t, ret, ts), 1)

/* Sleeps: record sleeps and records the outcome (ret | errno << 32); replay returns it. */
extern int reprise_sleep_pre(uint64_t *out);
extern void reprise_sleep_post(uint64_t outcome);
#define SLEEP(ret, name, params, args, failed) \
    ret name params \
    { \
        REAL(ret, name, params); \
        uint64_t out = 0; \
        ret r; \
        switch (reprise_sleep_pre(&out)) { \
        case PRE_NATIVE: return real_##name args; \
        case PRE_DONE: \
            r = (ret)(uint32_t)out; \
            if (failed) errno = (int)(out >> 32); \
            return r; \
        case PRE_CANCEL: reprise_shim_cancel_now(); \
        } \
        CANCELLABLE(NULL, r = real_##name args); \
        int e = (failed) ? errno : 0; \
        reprise_sleep_post((uint64_t)(uint32_t)r | ((uint64_t)(uint32_t)e << 32)); \
        if (failed) errno = e; \
        return r; \
    }
SLEEP(int, nanosleep, (const struct timespec *req, struct timespec *rem), (req, rem), r != 0)
/* clock_nanosleep returns the error number itself. */
SLEEP(int, clock_nanosleep, (clockid_t c, int flags, const struct timespec *req, struct timespec *rem), (c, flags, req, rem), 0)
SLEEP(int, usleep, (useconds_t us), (us), r != 0)
SLEEP(unsigned, sleep, (unsigned s), (s), 0)

/* Waits for a signal handler (sigsuspend, pause): they return once a handler ran on this
 * thread, but the runtime defers the program's handler to the thread's next runtime entry, so
 * their return is one (reprise_safe_point): the handler runs before the program sees EINTR
 * (a program looping `while (!flag) sigsuspend(&m)` on a flag its handler sets, without a
 * runtime entry in between, as in sync mode, waited for good). They sleep while recording and
 * return the recorded outcome in replay, where no real signal need come (lbzip2's main thread
 * waits so for its worker's kill(pid, SIGUSR2)); the recorded delivery is made at that same
 * entry. */
#include <signal.h>
#define HANDLER_WAIT(name, params, args) \
    int name params \
    { \
        REAL(int, name, params); \
        uint64_t out = 0; \
        int r, e, k = reprise_sleep_pre(&out); \
        if (k == PRE_NATIVE) return real_##name args; \
        if (k == PRE_CANCEL) reprise_shim_cancel_now(); \
        if (k == PRE_DONE) { \
            r = (int)(uint32_t)out; \
            e = (int)(out >> 32); \
        } else { \
            CANCELLABLE(NULL, r = real_##name args); \
            e = errno; \
            reprise_sleep_post((uint64_t)(uint32_t)r | ((uint64_t)(uint32_t)e << 32)); \
        } \
        reprise_safe_point(); \
        errno = e; \
        return r; \
    }
HANDLER_WAIT(sigsuspend, (const sigset_t *mask), (mask))
HANDLER_WAIT(pause, (void), ())

/* The unwinder (libgcc_s, or LLVM's libunwind) takes pthread mutexes and a pthread_once of its
 * own while it unwinds. Those calls are not the program's: the number of frames it visits
 * differs between a recorded cancellation (unwinding from glibc's signal handler) and its
 * replay (from pthread_exit), so they pass through unrecorded. */
#include <link.h>
static uintptr_t exe_lo, exe_hi, unw_lo, unw_hi;
static int from_unwinder(const void *ra)
{
    uintptr_t a = (uintptr_t)ra;
    uintptr_t hi = __atomic_load_n(&exe_hi, __ATOMIC_ACQUIRE);
    if (a >= exe_lo && a < hi) return 0;
    hi = __atomic_load_n(&unw_hi, __ATOMIC_ACQUIRE);
    if (hi) return a >= unw_lo && a < hi;
#if __GLIBC_PREREQ(2, 35)
    struct dl_find_object o;
    if (!exe_lo && _dl_find_object((void *)from_unwinder, &o) == 0) {
        exe_lo = (uintptr_t)o.dlfo_map_start;
        __atomic_store_n(&exe_hi, (uintptr_t)o.dlfo_map_end, __ATOMIC_RELEASE);
    }
    if (_dl_find_object((void *)ra, &o) != 0 || !o.dlfo_link_map || !o.dlfo_link_map->l_name) return 0;
    const char *name = o.dlfo_link_map->l_name;
    if (!strstr(name, "libgcc_s.") && !strstr(name, "libunwind.")) return 0;
    unw_lo = (uintptr_t)o.dlfo_map_start;
    __atomic_store_n(&unw_hi, (uintptr_t)o.dlfo_map_end, __ATOMIC_RELEASE);
    return 1;
#else
    Dl_info info;
    if (!dladdr(ra, &info) || !info.dli_fname) return 0;
    return strstr(info.dli_fname, "libgcc_s.") || strstr(info.dli_fname, "libunwind.");
#endif
}

extern int reprise_pthread_mutex_lock(pthread_mutex_t *m);
extern int reprise_pthread_mutex_unlock(pthread_mutex_t *m);
extern int reprise_pthread_once(pthread_once_t *o, void (*f)(void));
int pthread_mutex_lock(pthread_mutex_t *m)
{
    REAL(int, pthread_mutex_lock, (pthread_mutex_t *));
    if (from_unwinder(__builtin_return_address(0))) return real_pthread_mutex_lock(m);
    return reprise_pthread_mutex_lock(m);
}
int pthread_mutex_unlock(pthread_mutex_t *m)
{
    REAL(int, pthread_mutex_unlock, (pthread_mutex_t *));
    if (from_unwinder(__builtin_return_address(0))) return real_pthread_mutex_unlock(m);
    return reprise_pthread_mutex_unlock(m);
}
int pthread_once(pthread_once_t *o, void (*f)(void))
{
    REAL(int, pthread_once, (pthread_once_t *, void (*)(void)));
    if (from_unwinder(__builtin_return_address(0))) return real_pthread_once(o, f);
    return reprise_pthread_once(o, f);
}

/* The C interposers of this file (the tests check that the archive defines no libc name
 * strongly). */
#pragma weak clock_nanosleep
#pragma weak nanosleep
#pragma weak pause
#pragma weak pthread_cancel
#pragma weak pthread_cond_clockwait
#pragma weak pthread_cond_timedwait
#pragma weak pthread_cond_wait
#pragma weak pthread_exit
#pragma weak pthread_join
#pragma weak pthread_mutex_lock
#pragma weak pthread_mutex_unlock
#pragma weak pthread_once
#pragma weak pthread_testcancel
#pragma weak pthread_timedjoin_np
#pragma weak sem_clockwait
#pragma weak sem_timedwait
#pragma weak sem_wait
#pragma weak sigsuspend
#pragma weak sleep
#pragma weak usleep
