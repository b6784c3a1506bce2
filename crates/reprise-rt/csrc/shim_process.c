/* shim_process.c: clocks and process identity (recorded results), syscall() (a safe point),
 * and the calls that start another program. */
#include "shim.h"
#include <sys/resource.h>
#include <signal.h>

/* ---- clocks and identity: recorded results ------------------------------------------------ */

/* While the runtime is active a clock is read with the system call, not the vDSO, whose reads
 * of the time-stamp counter the runtime traps (tsc.rs, reprise_clock_syscall). */
extern long reprise_clock_syscall(long nr, unsigned long a1, unsigned long a2);
static int clock_syscall(long nr, unsigned long a1, unsigned long a2)
{
    long k = reprise_clock_syscall(nr, a1, a2);
    if (k < 0) {
        errno = (int)-k;
        return -1;
    }
    return (int)k;
}
int clock_gettime(clockid_t c, struct timespec *ts)
{
    REAL(int, clock_gettime, (clockid_t, struct timespec *));
    if (!reprise_active()) return real_clock_gettime(c, ts);
    int r = clock_syscall(SYS_clock_gettime, (unsigned long)c, (unsigned long)ts);
    r = (int)reprise_input((uint64_t)(int64_t)r);
    if (r == 0 && ts) {
        ts->tv_sec = (time_t)reprise_input((uint64_t)ts->tv_sec);
        ts->tv_nsec = (long)reprise_input((uint64_t)ts->tv_nsec);
    }
    return r;
}
int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    REAL(int, gettimeofday, (struct timeval *, void *));
    if (!reprise_active()) return real_gettimeofday(tv, tz);
    int r = clock_syscall(SYS_gettimeofday, (unsigned long)tv, (unsigned long)tz);
    if (tv) {
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
/* C11's timespec_get reads the clock inside libc (not through the clock_gettime above). */
int timespec_get(struct timespec *ts, int base)
{
    REAL(int, timespec_get, (struct timespec *, int));
    int r = real_timespec_get(ts, base);
    if (reprise_active()) {
        r = (int)reprise_input((uint64_t)(int64_t)r);
        if (r != 0 && ts) {
            ts->tv_sec = (time_t)reprise_input((uint64_t)ts->tv_sec);
            ts->tv_nsec = (long)reprise_input((uint64_t)ts->tv_nsec);
        }
    }
    return r;
}
/* CPU time used and the load average: outcomes of timing, recorded. */
RECORDED_OUT(int, getrusage, (int who, struct rusage *u), (who, u), u, sizeof *u)
int getloadavg(double *a, int n)
{
    REAL(int, getloadavg, (double *, int));
    int r = real_getloadavg(a, n);
    if (!reprise_active()) return r;
    r = (int)reprise_input((uint64_t)(int64_t)r);
    for (int i = 0; i < r && i < n; i++) {
        union { double d; uint64_t u; } v = {.d = a[i]};
        v.u = reprise_input(v.u);
        a[i] = v.d;
    }
    return r;
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
/* The pid getpid gave the program: the recording's, in replay. */
static pid_t given_pid;
pid_t getpid(void)
{
    REAL(pid_t, getpid, (void));
    pid_t v = real_getpid();
    if (!reprise_active()) return v;
    v = (pid_t)reprise_input((uint64_t)v);
    __atomic_store_n(&given_pid, v, __ATOMIC_RELAXED);
    return v;
}
/* A signal the program sends to the pid it was given is meant for itself, which in replay has
 * another pid (lbzip2's worker ends with kill(pid, SIGUSR2), pid saved from getpid(), to wake
 * the main thread from sigsuspend; in replay that kill failed with ESRCH, lbzip2 aborted and
 * the replay stalled). In replay, a signal whose disposition the runtime wraps is not sent:
 * its recorded delivery is injected at its recorded entry (signals.rs), and a real one would
 * only stay pending where the recording's was taken (lbzip2 blocks SIGUSR2, then resets it to
 * the default and unblocks it: the replay died of it). Any other goes to the process itself
 * (a thread in sigwait, a default action). */
extern int reprise_signal_wrapped(int sig);
extern void reprise_self_signal(int sig);
/* kill, tgkill and sigqueue: a signal to the pid the program was given goes to the process
 * itself, as above, or is not sent. A thread id the program was given (the recording's, from
 * gettid) names in replay the thread that was given it. Before, the recorded ids went to the
 * kernel: ESRCH, or another process's thread. */
extern void reprise_note_given_tid(unsigned given);
extern unsigned reprise_real_tid(unsigned given);
static int to_self(pid_t *pid, int sig)
{
    pid_t given = __atomic_load_n(&given_pid, __ATOMIC_RELAXED);
    if (!(given > 0 && *pid == given)) return 0;
    /* A wrapped signal to the program itself is an ordered event, before the real call in
     * record and instead of it in replay: its delivery waits for it there (signals.rs). */
    int wrapped = reprise_signal_wrapped(sig);
    if (wrapped) reprise_self_signal(sig);
    if (!reprise_io_replaying()) return 0;
    if (wrapped) return 1;
    *pid = (pid_t)raw_syscall3(SYS_getpid, 0, 0, 0);
    return 0;
}
int kill(pid_t pid, int sig)
{
    REAL(int, kill, (pid_t, int));
    if (to_self(&pid, sig)) return 0;
    return real_kill(reprise_shim_child_real(pid), sig);
}
int tgkill(pid_t pid, pid_t tid, int sig)
{
    REAL(int, tgkill, (pid_t, pid_t, int));
    pid_t own = pid;
    if (to_self(&pid, sig)) return 0;
    if (own != pid) tid = (pid_t)reprise_real_tid((unsigned)tid);
    return real_tgkill(pid, tid, sig);
}
int sigqueue(pid_t pid, int sig, const union sigval v)
{
    REAL(int, sigqueue, (pid_t, int, const union sigval));
    if (to_self(&pid, sig)) return 0;
    return real_sigqueue(reprise_shim_child_real(pid), sig, v);
}
pid_t getppid(void)
{
    REAL(pid_t, getppid, (void));
    pid_t v = real_getppid();
    return reprise_active() ? (pid_t)reprise_input((uint64_t)v) : v;
}
/* The thread id, recorded; in replay the id given is noted for tgkill (below). */
static pid_t given_tid(pid_t v)
{
    if (!reprise_active()) return v;
    v = (pid_t)reprise_input((uint64_t)v);
    if (reprise_io_replaying()) reprise_note_given_tid((unsigned)v);
    return v;
}
pid_t gettid(void)
{
    return given_tid((pid_t)raw_syscall3(SYS_gettid, 0, 0, 0));
}
/* The process or thread a pid the program was given names in this run (replay: the
 * recording's ids name the replay's process and threads). */
static pid_t own_id(pid_t pid)
{
    if (!reprise_io_replaying() || pid <= 0) return pid;
    if (pid == __atomic_load_n(&given_pid, __ATOMIC_RELAXED)) return (pid_t)raw_syscall3(SYS_getpid, 0, 0, 0);
    return (pid_t)reprise_real_tid((unsigned)pid);
}
/* Pinning a thread: performed in both runs on the thread it names (fio pins its clock-test
 * threads by the id gettid gave it, the recording's: ESRCH in the replay, which took its
 * error path and got stuck), its result the recorded one (a replay pinned with taskset
 * cannot pin a thread to another CPU: EINVAL, while the recording could). */
int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *mask)
{
    REAL(int, sched_setaffinity, (pid_t, size_t, const cpu_set_t *));
    if (!reprise_active()) return real_sched_setaffinity(pid, size, mask);
    reprise_safe_point();
    long r = real_sched_setaffinity(own_id(pid), size, mask);
    return (int)reprise_shim_io_result(r, errno);
}
int pthread_setaffinity_np(pthread_t th, size_t size, const cpu_set_t *mask)
{
    REAL(int, pthread_setaffinity_np, (pthread_t, size_t, const cpu_set_t *));
    if (!reprise_active()) return real_pthread_setaffinity_np(th, size, mask);
    reprise_safe_point();
    return (int)reprise_shim_io_result(real_pthread_setaffinity_np(th, size, mask), 0);
}
int sched_getcpu(void)
{
    REAL(int, sched_getcpu, (void));
    int v = real_sched_getcpu();
    return reprise_active() ? (int)reprise_input((uint64_t)(int64_t)v) : v;
}

/* ---- syscall(): a safe point; futex waits inside libstdc++ go through it (recorded) ------- */
extern void reprise_process_exiting(void);
extern int reprise_futex_recorded(int op);
extern int reprise_futex_block_begin(int op, uintptr_t addr, int timed);
extern void reprise_futex_block_end(void);

long syscall(long n, ...)
{
    REAL(long, syscall, (long, long, long, long, long, long, long));
    va_list ap;
    va_start(ap, n);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    /* A futex wait made for real is marked blocked for the watchdogs at its safe point
     * (calls.rs). */
    int recorded = n == SYS_futex && reprise_futex_recorded((int)a2);
    int blocked = 0;
    if (n == SYS_futex && !(recorded && reprise_io_replaying()))
        blocked = reprise_futex_block_begin((int)a2, (uintptr_t)a1, a4 != 0);
    else
        reprise_safe_point();
    /* The process ends without exit() (see _exit below). */
    if (n == SYS_exit_group) reprise_process_exiting();
    /* A futex wait or wake of the program's own (libstdc++'s atomic wait): its result and
     * errno are recorded; replay gives them back without the call, since the program's
     * instrumented loads around it are what order it, and nobody sleeps on the word in replay
     * (calls.rs, reprise_futex_recorded). */
    if (recorded) {
        long r = -1;
        int e = 0;
        if (!reprise_io_replaying()) {
            r = real_syscall(n, a1, a2, a3, a4, a5, a6);
            e = errno;
        }
        if (blocked) reprise_futex_block_end();
        return reprise_shim_io_result(r, e);
    }
    /* Random bytes drawn with the raw system call (OpenSSL and other libraries do, past
     * glibc's getrandom): recorded data, as getrandom's. */
    if (n == SYS_getrandom && reprise_active()) {
        long r = -1;
        int e = 0;
        if (!reprise_io_replaying()) {
            r = real_syscall(n, a1, a2, a3, a4, a5, a6);
            e = errno;
        }
        r = reprise_shim_io_result(r, e);
        if (r > 0) reprise_io_data((void *)a1, (size_t)r);
        return r;
    }
    long r = real_syscall(n, a1, a2, a3, a4, a5, a6);
    if (blocked) {
        int e = errno;
        reprise_futex_block_end();
        errno = e;
    }
    if (n == SYS_gettid) r = (long)given_tid((pid_t)r);
    return r;
}

/* ---- starting other programs ----------------------------------------------------------------
 * rdtsc trapping is inherited by child processes and kept across exec: lift it around the calls
 * that start another program, so that program never dies of the runtime's trap. */
#include <spawn.h>
extern void reprise_tsc_trap(int on);

extern void reprise_exec_note(const char *path);
#define SPAWNING(ret, name, params, args)     \
    SPAWNING_NOTE(ret, name, params, args, (void)0)
#define EXECING(ret, name, params, args, path) \
    SPAWNING_NOTE(ret, name, params, args, reprise_exec_note(path))
#define SPAWNING_NOTE(ret, name, params, args, note) \
    ret name params                            \
    {                                          \
        REAL(ret, name, params);               \
        reprise_safe_point();                  \
        note;                                  \
        reprise_tsc_trap(0);                   \
        ret r = real_##name args;              \
        int e = errno;                         \
        reprise_tsc_trap(1);                   \
        errno = e;                             \
        return r;                              \
    }
SPAWNING(int, system, (const char *c), (c))

/* popen(cmd, "r"): the command's output is read through stdio, whose reads are recorded like
 * any input. Replay does not run the command again (it wrote into a pipe nobody read, died of
 * SIGPIPE, which changed pclose's status, and any side effect happened again): popen gives a
 * stream on /dev/null, whose reads come from the trace, and pclose the recorded status. Other
 * modes start the command as system() does. */
static FILE *piped[16]; /* streams popen opened for reading, until pclose */
static int piped_slot(FILE *find, FILE *put)
{
    for (int i = 0; i < 16; i++) {
        FILE *cur = find;
        if (__atomic_compare_exchange_n(&piped[i], &cur, put, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return 1;
    }
    return 0;
}
FILE *popen(const char *c, const char *m)
{
    REAL(FILE *, popen, (const char *, const char *));
    reprise_safe_point();
    int rd = m && m[0] == 'r' && reprise_active();
    FILE *f;
    if (rd && reprise_io_replaying()) {
        REAL(FILE *, fopen, (const char *, const char *));
        if (reprise_shim_io_result(-1, 0) < 0) return NULL;
        f = real_fopen("/dev/null", "r");
    } else {
        reprise_tsc_trap(0);
        f = real_popen(c, m);
        int e = errno;
        reprise_tsc_trap(1);
        if (rd) reprise_shim_io_result(f ? 0 : -1, e);
        errno = e;
    }
    if (rd && f) piped_slot(NULL, f);
    /* popen(cmd, "w"): the command reads what the program writes; replay runs it again and
     * writes the recorded bytes again (shim_child.c). */
    if (!rd && f && m && m[0] == 'w' && reprise_active()) reprise_shim_pipe_to_child(fileno(f));
    return f;
}
int pclose(FILE *f)
{
    REAL(int, pclose, (FILE *));
    if (!f || !piped_slot(f, NULL)) return real_pclose(f);
    reprise_safe_point();
    if (reprise_io_replaying()) {
        REAL(int, fclose, (FILE *));
        real_fclose(f);
        return (int)reprise_shim_io_result(-1, 0);
    }
    int r = real_pclose(f);
    return (int)reprise_shim_io_result(r, errno);
}
/* posix_spawn's child is noted as fork's is (shim_child.c: a recorded wait names it). */
#define SPAWN_PID(name)                                                                      \
    int name(pid_t *p, const char *f, const posix_spawn_file_actions_t *a,                  \
             const posix_spawnattr_t *at, char *const av[], char *const ev[])               \
    {                                                                                        \
        REAL(int, name, (pid_t *, const char *, const posix_spawn_file_actions_t *,         \
                         const posix_spawnattr_t *, char *const[], char *const[]));         \
        reprise_safe_point();                                                                \
        pid_t own = -1;                                                                      \
        reprise_tsc_trap(0);                                                                 \
        int r = real_##name(p ? p : &own, f, a, at, av, ev);                                 \
        int e = errno;                                                                       \
        reprise_tsc_trap(1);                                                                 \
        pid_t given = reprise_shim_child_made(r == 0 ? (p ? *p : own) : -1);                 \
        if (r == 0 && p) *p = given;                                                         \
        errno = e;                                                                           \
        return r;                                                                            \
    }
SPAWN_PID(posix_spawn)
SPAWN_PID(posix_spawnp)
EXECING(int, execve, (const char *f, char *const av[], char *const ev[]), (f, av, ev), f)
EXECING(int, execv, (const char *f, char *const av[]), (f, av), f)
EXECING(int, execvp, (const char *f, char *const av[]), (f, av), f)
EXECING(int, execvpe, (const char *f, char *const av[], char *const ev[]), (f, av, ev), f)
EXECING(int, fexecve, (int fd, char *const av[], char *const ev[]), (fd, av, ev), NULL)

/* execl, execlp, execle: glibc's call its execve internally, which no interposer sees (the
 * program then started with the TSC still trapped, and died of its first rdtsc): their
 * argument lists become the vectors of the interposed execv, execvp and execve. */
/* The arguments after the first up to the terminating null pointer: how many (ap untouched). */
static size_t va_args_count(va_list ap)
{
    va_list c;
    va_copy(c, ap);
    size_t n = 0;
    while (va_arg(c, char *)) n++;
    va_end(c);
    return n;
}
/* argv = arg0, the n arguments from *ap, a null pointer (*ap is left after that null: a
 * pointer, so the caller may go on reading it). */
static void va_args_fill(char **argv, const char *arg0, va_list *ap, size_t n)
{
    argv[0] = (char *)arg0;
    for (size_t i = 1; i <= n + 1; i++) argv[i] = va_arg(*ap, char *);
}
#define EXEC_LIST(name, first, vexec)               \
    int name(const char *first, const char *arg, ...) \
    {                                                \
        va_list ap;                                  \
        va_start(ap, arg);                           \
        size_t n = va_args_count(ap);                \
        char *argv[n + 2];                           \
        va_args_fill(argv, arg, &ap, n);             \
        va_end(ap);                                  \
        return vexec(first, argv);                   \
    }
EXEC_LIST(execl, path, execv)
EXEC_LIST(execlp, file, execvp)
int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = va_args_count(ap);
    char *argv[n + 2];
    va_args_fill(argv, arg, &ap, n);
    char **envp = va_arg(ap, char **);
    va_end(ap);
    return execve(path, argv, envp);
}

/* ---- ending the process without exit() ----------------------------------------------------
 * _exit and _Exit skip the atexit handler that ends the recording (a shell's builtin then
 * _exit, a program that must not flush stdio twice): the runtime ends it here, as exit() would
 * (lifecycle.rs; a raw exit_group through syscall() above, or trapped by Syscall User
 * Dispatch, too). */
#define EXITING(name)                      \
    void name(int status)                  \
    {                                      \
        REAL(void, name, (int));           \
        reprise_process_exiting();         \
        real_##name(status);               \
        __builtin_unreachable();           \
    }
EXITING(_exit)
EXITING(_Exit)

/* The C interposers of this file (the tests check that the archive defines no libc name
 * strongly). */
#pragma weak _exit
#pragma weak _Exit
#pragma weak clock
#pragma weak clock_gettime
#pragma weak execl
#pragma weak execle
#pragma weak execlp
#pragma weak execv
#pragma weak fexecve
#pragma weak execve
#pragma weak execvp
#pragma weak execvpe
#pragma weak getpid
#pragma weak getppid
#pragma weak gettid
#pragma weak sched_setaffinity
#pragma weak pthread_setaffinity_np
#pragma weak gettimeofday
#pragma weak kill
#pragma weak tgkill
#pragma weak sigqueue
#pragma weak popen
#pragma weak timespec_get
#pragma weak getrusage
#pragma weak getloadavg
#pragma weak pclose
#pragma weak posix_spawn
#pragma weak posix_spawnp
#pragma weak sched_getcpu
#pragma weak syscall
#pragma weak system
#pragma weak time
#pragma weak times
