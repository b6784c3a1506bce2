/* libc_shim.c: interposers that are easier in C than in Rust (variadic functions, and long
 * lists of "take a turn, then call the real function" wrappers).
 *
 * Why these exist (DESIGN.md, "Invisible to interposition"): stdio streams and the libc
 * random-number state are protected by glibc-internal locks the runtime cannot see, so two
 * threads' printf or rand() calls would interleave differently in replay. Each call here is an
 * ordered event on the stripe of its object (the FILE, or the libc RNG state), so replay
 * reproduces the recorded order. Clock and process-identity reads are recorded results, given
 * back in replay.
 *
 * Every real function is found with dlsym(RTLD_NEXT) on first use. */
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

/* Provided by the Rust runtime. */
extern int reprise_ordered(const void *obj);   /* safe point + turn on obj's stripe; 0 if off */
extern void reprise_safe_point(void);
extern uint64_t reprise_input(uint64_t live);   /* record: logs live; replay: recorded value */
extern int reprise_active(void);                /* 1 while recording or replaying this thread */

#define REAL(ret, name, params) \
    static ret(*real_##name) params; \
    if (!real_##name) real_##name = (ret(*) params)dlsym(RTLD_NEXT, #name);

/* ---- stdio: ordered per FILE ------------------------------------------------------------ */

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    REAL(int, vfprintf, (FILE *, const char *, va_list));
    reprise_ordered(f);
    return real_vfprintf(f, fmt, ap);
}
int vprintf(const char *fmt, va_list ap) { return vfprintf(stdout, fmt, ap); }
int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(stdout, fmt, ap);
    va_end(ap);
    return r;
}
int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
    REAL(int, __vfprintf_chk, (FILE *, int, const char *, va_list));
    reprise_ordered(f);
    return real___vfprintf_chk(f, flag, fmt, ap);
}
int __vprintf_chk(int flag, const char *fmt, va_list ap) { return __vfprintf_chk(stdout, flag, fmt, ap); }
int __printf_chk(int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vfprintf_chk(stdout, flag, fmt, ap);
    va_end(ap);
    return r;
}
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vfprintf_chk(f, flag, fmt, ap);
    va_end(ap);
    return r;
}

#define ORDERED(ret, name, params, args, obj) \
    ret name params \
    { \
        REAL(ret, name, params); \
        reprise_ordered(obj); \
        return real_##name args; \
    }

ORDERED(int, puts, (const char *s), (s), stdout)
ORDERED(int, fputs, (const char *s, FILE *f), (s, f), f)
ORDERED(int, fputc, (int c, FILE *f), (c, f), f)
ORDERED(int, putc, (int c, FILE *f), (c, f), f)
ORDERED(int, _IO_putc, (int c, FILE *f), (c, f), f)
ORDERED(int, putchar, (int c), (c), stdout)
ORDERED(size_t, fwrite, (const void *p, size_t s, size_t n, FILE *f), (p, s, n, f), f)
ORDERED(int, fflush, (FILE *f), (f), f ? (const void *)f : (const void *)stdout)
ORDERED(void, perror, (const char *s), (s), stderr)
ORDERED(char *, fgets, (char *s, int n, FILE *f), (s, n, f), f)
ORDERED(int, fgetc, (FILE *f), (f), f)
ORDERED(int, getc, (FILE *f), (f), f)
ORDERED(size_t, fread, (void *p, size_t s, size_t n, FILE *f), (p, s, n, f), f)

/* ---- libc random state: one ordered object ------------------------------------------------ */

static char rng_state_obj;
ORDERED(int, rand, (void), (), &rng_state_obj)
ORDERED(void, srand, (unsigned s), (s), &rng_state_obj)
ORDERED(long, random, (void), (), &rng_state_obj)
ORDERED(void, srandom, (unsigned s), (s), &rng_state_obj)
ORDERED(double, drand48, (void), (), &rng_state_obj)
ORDERED(long, lrand48, (void), (), &rng_state_obj)
ORDERED(long, mrand48, (void), (), &rng_state_obj)
ORDERED(void, srand48, (long s), (s), &rng_state_obj)
ORDERED(unsigned short *, seed48, (unsigned short s[3]), (s), &rng_state_obj)
ORDERED(void, lcong48, (unsigned short p[7]), (p), &rng_state_obj)

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
    pid_t v = (pid_t)syscall(SYS_gettid);
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
