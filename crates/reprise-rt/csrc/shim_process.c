/* shim_process.c: clocks and process identity (recorded results), syscall() (a safe point),
 * and the calls that start another program. */
#include "shim.h"

/* ---- clocks and identity: recorded results ------------------------------------------------ */

int clock_gettime(clockid_t c, struct timespec *ts)
{
    REAL(int, clock_gettime, (clockid_t, struct timespec *));
    int r = real_clock_gettime(c, ts);
    if (reprise_active()) {
        r = (int)reprise_input((uint64_t)(int64_t)r);
        if (r == 0 && ts) {
            ts->tv_sec = (time_t)reprise_input((uint64_t)ts->tv_sec);
            ts->tv_nsec = (long)reprise_input((uint64_t)ts->tv_nsec);
        }
    }
    return r;
}
int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    REAL(int, gettimeofday, (struct timeval *, void *));
    int r = real_gettimeofday(tv, tz);
    if (reprise_active() && tv) {
        tv->tv_sec = (time_t)reprise_input((uint64_t)tv->tv_sec);
        tv->tv_usec = (suseconds_t)reprise_input((uint64_t)tv->tv_usec);
    }
    return r;
}
time_t time(time_t *t)
{
    REAL(time_t, time, (time_t *));
    time_t v = real_time(NULL);
    if (reprise_active()) v = (time_t)reprise_input((uint64_t)v);
    if (t) *t = v;
    return v;
}
clock_t clock(void)
{
    REAL(clock_t, clock, (void));
    clock_t v = real_clock();
    return reprise_active() ? (clock_t)reprise_input((uint64_t)v) : v;
}
clock_t times(struct tms *b)
{
    REAL(clock_t, times, (struct tms *));
    clock_t v = real_times(b);
    if (reprise_active()) {
        v = (clock_t)reprise_input((uint64_t)v);
        if (b) {
            b->tms_utime = (clock_t)reprise_input((uint64_t)b->tms_utime);
            b->tms_stime = (clock_t)reprise_input((uint64_t)b->tms_stime);
            b->tms_cutime = (clock_t)reprise_input((uint64_t)b->tms_cutime);
            b->tms_cstime = (clock_t)reprise_input((uint64_t)b->tms_cstime);
        }
    }
    return v;
}
pid_t getpid(void)
{
    REAL(pid_t, getpid, (void));
    pid_t v = real_getpid();
    return reprise_active() ? (pid_t)reprise_input((uint64_t)v) : v;
}
pid_t getppid(void)
{
    REAL(pid_t, getppid, (void));
    pid_t v = real_getppid();
    return reprise_active() ? (pid_t)reprise_input((uint64_t)v) : v;
}
pid_t gettid(void)
{
    pid_t v = (pid_t)raw_syscall3(SYS_gettid, 0, 0, 0);
    return reprise_active() ? (pid_t)reprise_input((uint64_t)v) : v;
}
int sched_getcpu(void)
{
    REAL(int, sched_getcpu, (void));
    int v = real_sched_getcpu();
    return reprise_active() ? (int)reprise_input((uint64_t)(int64_t)v) : v;
}

/* ---- syscall(): a safe point; futex waits inside libstdc++ go through it ------------------- */

long syscall(long n, ...)
{
    REAL(long, syscall, (long, long, long, long, long, long, long));
    va_list ap;
    va_start(ap, n);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    reprise_safe_point();
    long r = real_syscall(n, a1, a2, a3, a4, a5, a6);
    if (n == SYS_gettid && reprise_active()) r = (long)reprise_input((uint64_t)r);
    return r;
}

/* ---- starting other programs ----------------------------------------------------------------
 * rdtsc trapping is inherited by child processes and kept across exec: lift it around the calls
 * that start another program, so that program never dies of the runtime's trap. */
#include <spawn.h>
extern void reprise_tsc_trap(int on);

#define SPAWNING(ret, name, params, args)     \
    ret name params                            \
    {                                          \
        REAL(ret, name, params);               \
        reprise_safe_point();                  \
        reprise_tsc_trap(0);                   \
        ret r = real_##name args;              \
        int e = errno;                         \
        reprise_tsc_trap(1);                   \
        errno = e;                             \
        return r;                              \
    }
SPAWNING(int, system, (const char *c), (c))
SPAWNING(FILE *, popen, (const char *c, const char *m), (c, m))
SPAWNING(int, posix_spawn, (pid_t *p, const char *f, const posix_spawn_file_actions_t *a, const posix_spawnattr_t *at, char *const av[], char *const ev[]), (p, f, a, at, av, ev))
SPAWNING(int, posix_spawnp, (pid_t *p, const char *f, const posix_spawn_file_actions_t *a, const posix_spawnattr_t *at, char *const av[], char *const ev[]), (p, f, a, at, av, ev))
SPAWNING(int, execve, (const char *f, char *const av[], char *const ev[]), (f, av, ev))
SPAWNING(int, execv, (const char *f, char *const av[]), (f, av))
SPAWNING(int, execvp, (const char *f, char *const av[]), (f, av))
SPAWNING(int, execvpe, (const char *f, char *const av[], char *const ev[]), (f, av, ev))

/* The C interposers of this file (the tests check that the archive defines no libc name
 * strongly). */
#pragma weak clock
#pragma weak clock_gettime
#pragma weak execv
#pragma weak execve
#pragma weak execvp
#pragma weak execvpe
#pragma weak getpid
#pragma weak getppid
#pragma weak gettid
#pragma weak gettimeofday
#pragma weak popen
#pragma weak posix_spawn
#pragma weak posix_spawnp
#pragma weak sched_getcpu
#pragma weak syscall
#pragma weak system
#pragma weak time
#pragma weak times
