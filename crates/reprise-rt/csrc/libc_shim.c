/* libc_shim.c: interposers that are easier in C than in Rust (variadic functions, and long
 * lists of "take a turn, then call the real function" wrappers).
 *
 * Why these exist (glibc-internal locks are invisible to interposition): stdio streams and the libc
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

/* The runtime's own system calls, by number: the program may define its own `fstat`, `dup2` or
 * `syscall` (see "names" at the end), and those must not be the ones called here. */
static long raw_syscall3(long n, long a1, long a2, long a3)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2), "d"(a3) : "rcx", "r11", "memory");
    return r;
}
#define RAW_FSTAT(fd, st) (raw_syscall3(SYS_fstat, (fd), (long)(st), 0) == 0 ? 0 : -1)
#define RAW_FSTATFS(fd, st) (raw_syscall3(SYS_fstatfs, (fd), (long)(st), 0) == 0 ? 0 : -1)
#define RAW_DUP2(a, b) raw_syscall3(SYS_dup2, (a), (b), 0)

/* ---- cancellation points (cancel.rs; the thread section at the end says why) -------------- */
#include <errno.h>
#include <pthread.h>
extern int reprise_cancel_point(void);
extern void reprise_cancelled(pthread_mutex_t *relock);
extern void reprise_cancel_exit(void);
extern void reprise_cancel_unseen(void);

/* The thread's unwind is one the runtime knows: pthread_exit, or a recorded/replayed
 * cancellation at one of its cancellation points. */
static __thread int exit_seen;

/* Replay: the recorded thread was cancelled here; end it the same way. */
__attribute__((noreturn)) static void cancel_now(void)
{
    REAL(void, pthread_exit, (void *));
    exit_seen = 1;
    reprise_cancel_exit();
    real_pthread_exit(PTHREAD_CANCELED);
    __builtin_unreachable();
}
#define CANCEL_POINT() do { if (reprise_cancel_point()) cancel_now(); } while (0)

/* Record: `stmt` makes a real call that is a cancellation point; if the thread is cancelled in
 * it, the cleanup runs during the unwind and logs where (relock: a condition wait's mutex). */
struct cancel_guard { int armed; pthread_mutex_t *relock; };
static void cancel_cleanup(struct cancel_guard *g)
{
    if (!g->armed) return;
    exit_seen = 1;
    reprise_cancelled(g->relock);
    reprise_cancel_exit();
}
#define CANCELLABLE(relock, stmt) \
    do { \
        struct cancel_guard cg_ __attribute__((cleanup(cancel_cleanup))) = {1, (relock)}; \
        stmt; \
        cg_.armed = 0; \
    } while (0)

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

/* ---- stdio input, fopen and fclose: ordered per FILE, and every system call inside captured
 * (capture.rs): the bytes stdio reads from a file, pipe or tty, what it asks about the
 * descriptor, the descriptor fopen gets. A call on a FILE takes its turn; fopen/fclose take the
 * descriptor-allocation turn; the _unlocked forms (used under the program's flockfile) take none. */
extern int reprise_capture_begin(const void *obj);
extern void reprise_capture_end(int began);
static char fd_alloc_obj; /* calls that allocate or free descriptor numbers (see close) */

#define INPUT(ret, name, params, args, obj) \
    ret name params \
    { \
        REAL(ret, name, params); \
        int c_ = reprise_capture_begin(obj); \
        ret r_ = real_##name args; \
        reprise_capture_end(c_); \
        return r_; \
    }
#define INPUT_VOID(name, params, args, obj) \
    void name params \
    { \
        REAL(void, name, params); \
        int c_ = reprise_capture_begin(obj); \
        real_##name args; \
        reprise_capture_end(c_); \
    }

/* stdio.h may define some of these as macros (with optimisation). */
#undef fread_unlocked
#undef fgetc_unlocked
#undef getc_unlocked
#undef getchar_unlocked
#undef getc
#undef getchar
#undef fgets_unlocked
INPUT(char *, fgets, (char *s, int n, FILE *f), (s, n, f), f)
INPUT(char *, __fgets_chk, (char *s, size_t sz, int n, FILE *f), (s, sz, n, f), f)
INPUT(char *, fgets_unlocked, (char *s, int n, FILE *f), (s, n, f), NULL)
INPUT(char *, __fgets_unlocked_chk, (char *s, size_t sz, int n, FILE *f), (s, sz, n, f), NULL)
INPUT(int, fgetc, (FILE *f), (f), f)
INPUT(int, getc, (FILE *f), (f), f)
INPUT(int, _IO_getc, (FILE *f), (f), f)
INPUT(int, getchar, (void), (), stdin)
INPUT(int, fgetc_unlocked, (FILE *f), (f), NULL)
INPUT(int, getc_unlocked, (FILE *f), (f), NULL)
INPUT(int, getchar_unlocked, (void), (), NULL)
INPUT(int, __uflow, (FILE *f), (f), NULL)
INPUT(int, __underflow, (FILE *f), (f), NULL)
INPUT(int, ungetc, (int c, FILE *f), (c, f), f)
INPUT(size_t, fread, (void *p, size_t s, size_t n, FILE *f), (p, s, n, f), f)
INPUT(size_t, __fread_chk, (void *p, size_t sz, size_t s, size_t n, FILE *f), (p, sz, s, n, f), f)
INPUT(size_t, fread_unlocked, (void *p, size_t s, size_t n, FILE *f), (p, s, n, f), NULL)
INPUT(size_t, __fread_unlocked_chk, (void *p, size_t sz, size_t s, size_t n, FILE *f), (p, sz, s, n, f), NULL)
INPUT(ssize_t, getline, (char **l, size_t *n, FILE *f), (l, n, f), f)
INPUT(ssize_t, getdelim, (char **l, size_t *n, int d, FILE *f), (l, n, d, f), f)
INPUT(ssize_t, __getdelim, (char **l, size_t *n, int d, FILE *f), (l, n, d, f), f)
INPUT(int, fseek, (FILE *f, long o, int w), (f, o, w), f)
INPUT(int, fseeko, (FILE *f, off_t o, int w), (f, o, w), f)
INPUT(int, fseeko64, (FILE *f, off_t o, int w), (f, o, w), f)
INPUT(long, ftell, (FILE *f), (f), f)
INPUT(off_t, ftello, (FILE *f), (f), f)
INPUT(off_t, ftello64, (FILE *f), (f), f)
INPUT_VOID(rewind, (FILE *f), (f), f)
INPUT(int, fgetpos, (FILE *f, fpos_t *p), (f, p), f)
INPUT(int, fsetpos, (FILE *f, const fpos_t *p), (f, p), f)
INPUT(FILE *, fopen, (const char *p, const char *m), (p, m), &fd_alloc_obj)
INPUT(FILE *, fopen64, (const char *p, const char *m), (p, m), &fd_alloc_obj)
INPUT(FILE *, fdopen, (int fd, const char *m), (fd, m), &fd_alloc_obj)
INPUT(FILE *, freopen, (const char *p, const char *m, FILE *f), (p, m, f), &fd_alloc_obj)
INPUT(FILE *, freopen64, (const char *p, const char *m, FILE *f), (p, m, f), &fd_alloc_obj)
INPUT(int, fclose, (FILE *f), (f), &fd_alloc_obj)

/* The scanf family, under their symbol names (stdio.h redirects scanf to __isoc99_scanf in C99
 * mode, so each wrapper names its symbol explicitly); every variant reaches the real v*f* form. */
typedef int (*vfscanf_fn)(FILE *, const char *, va_list);
static int scan(const char *vsym, vfscanf_fn *slot, FILE *f, const char *fmt, va_list ap)
{
    if (!*slot) *slot = (vfscanf_fn)dlsym(RTLD_NEXT, vsym);
    int c_ = reprise_capture_begin(f);
    int r_ = (*slot)(f, fmt, ap);
    reprise_capture_end(c_);
    return r_;
}
static vfscanf_fn real_vfscanf_gnu, real_vfscanf_c99;
#define SCAN_GNU(f, fmt, ap) scan("vfscanf", &real_vfscanf_gnu, f, fmt, ap)
#define SCAN_C99(f, fmt, ap) scan("__isoc99_vfscanf", &real_vfscanf_c99, f, fmt, ap)
#define SCANF(cname, sym, fparams, file, how) \
    int cname fparams __asm__(sym); \
    int cname fparams \
    { \
        va_list ap; \
        va_start(ap, fmt); \
        int r_ = how(file, fmt, ap); \
        va_end(ap); \
        return r_; \
    }
#define VSCANF(cname, sym, fparams, file, how) \
    int cname fparams __asm__(sym); \
    int cname fparams { return how(file, fmt, ap); }
SCANF(reprise_scanf_gnu, "scanf", (const char *fmt, ...), stdin, SCAN_GNU)
SCANF(reprise_fscanf_gnu, "fscanf", (FILE *f, const char *fmt, ...), f, SCAN_GNU)
SCANF(reprise_scanf_c99, "__isoc99_scanf", (const char *fmt, ...), stdin, SCAN_C99)
SCANF(reprise_fscanf_c99, "__isoc99_fscanf", (FILE *f, const char *fmt, ...), f, SCAN_C99)
VSCANF(reprise_vscanf_gnu, "vscanf", (const char *fmt, va_list ap), stdin, SCAN_GNU)
VSCANF(reprise_vfscanf_gnu, "vfscanf", (FILE *f, const char *fmt, va_list ap), f, SCAN_GNU)
VSCANF(reprise_vscanf_c99, "__isoc99_vscanf", (const char *fmt, va_list ap), stdin, SCAN_C99)
VSCANF(reprise_vfscanf_c99, "__isoc99_vfscanf", (FILE *f, const char *fmt, va_list ap), f, SCAN_C99)

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

/* ---- inputs and outputs on file descriptors ------------------------------------------------
 * Classes (seed 002, 2.2.3). Reads are *recordable*: the data is recorded and given back in
 * replay without reading. With `reprise record --hash-reads`, reads of regular files the
 * program has not written (not /proc or /sys) are *repeatable* instead: re-executed in replay
 * and checked by hash (small traces; replay then needs the same files). Writes to stdout/stderr are reproduced (performed, checked); every
 * other write is *revocable*: performed while recording, not performed in replay, checked by
 * hash. Socket set-up calls are recorded results; in replay they create placeholder
 * descriptors with the recorded numbers and touch no network.
 * Which way a call went is itself recorded, so replay follows the recording's decision. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <string.h>
#include <linux/magic.h>

extern int reprise_fd_event(int fd);
extern int reprise_io_replaying(void);
extern uint64_t reprise_io_check(uint64_t live, const char *what);
extern void reprise_io_data(void *buf, size_t len);

enum { IO_EMULATE = 1, IO_REEXEC = 2 };

/* Files (dev, inode) this program wrote while recording: their reads are recorded. */
static struct { dev_t dev; ino_t ino; } written[256];
static int nwritten;
static int written_lock;

static void lock_w(void) { while (__atomic_exchange_n(&written_lock, 1, __ATOMIC_ACQUIRE)) { } }
static void unlock_w(void) { __atomic_store_n(&written_lock, 0, __ATOMIC_RELEASE); }

static void mark_written(int fd)
{
    struct stat st;
    if (RAW_FSTAT(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    lock_w();
    int found = 0;
    for (int i = 0; i < nwritten; i++)
        if (written[i].dev == st.st_dev && written[i].ino == st.st_ino) found = 1;
    if (!found && nwritten < 256) {
        written[nwritten].dev = st.st_dev;
        written[nwritten].ino = st.st_ino;
        nwritten++;
    }
    unlock_w();
}

/* How a read of fd goes (decided while recording; replay follows the recorded class).
 * Repeatable (re-executed in replay, its length and a hash of its bytes checked) when fd is a
 * regular file (not stdin, /proc or /sys) the program has not opened for writing, and either
 * `--hash-reads` was given or the file is large (REEXEC_FILE_SIZE at the read: recording the
 * bytes of large inputs dominates the cost of recording programs that read them); never with
 * `--portable`. Otherwise recordable (the bytes go to the trace). */
extern int reprise_read_flags(void);
#define RF_HASH_ALL 1
#define RF_PORTABLE 2
#define REEXEC_FILE_SIZE (1L << 20) /* reprise_proto::REEXEC_FILE_SIZE */

/* Files already sent to the launcher as re-executed (F_FILE), by (dev, inode). */
static struct { dev_t dev; ino_t ino; } reexec_files[256];
static int nreexec;
extern void reprise_send_file(uint64_t dev, uint64_t ino, uint64_t size, int64_t msec, uint64_t mnsec,
                              const char *path, size_t len);

/* The first re-executed read of a file: tell the launcher its identity and path, which replay
 * checks before it starts (a missing or changed file is named at once, not found as a
 * divergence later). */
static void note_reexec(int fd, const struct stat *st)
{
    lock_w();
    for (int i = 0; i < nreexec; i++)
        if (reexec_files[i].dev == st->st_dev && reexec_files[i].ino == st->st_ino) { unlock_w(); return; }
    if (nreexec < 256) {
        reexec_files[nreexec].dev = st->st_dev;
        reexec_files[nreexec].ino = st->st_ino;
        nreexec++;
    }
    unlock_w();
    char link[40], path[1024];
    int k = 0;
    const char *pre = "/proc/self/fd/";
    while (pre[k]) { link[k] = pre[k]; k++; }
    char digits[12];
    int nd = 0;
    unsigned v = (unsigned)fd;
    do { digits[nd++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (nd) link[k++] = digits[--nd];
    link[k] = 0;
    long n = raw_syscall3(SYS_readlink, (long)link, (long)path, sizeof path);
    if (n < 0) n = 0;
    reprise_send_file((uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size, (int64_t)st->st_mtim.tv_sec,
                      (uint64_t)st->st_mtim.tv_nsec, path, (size_t)n);
}

static int file_read_class(int fd, int rf)
{
    if (fd == 0 || (rf & RF_PORTABLE)) return IO_EMULATE;
    struct stat st;
    if (RAW_FSTAT(fd, &st) != 0 || !S_ISREG(st.st_mode)) return IO_EMULATE;
    if (!(rf & RF_HASH_ALL) && st.st_size < REEXEC_FILE_SIZE) return IO_EMULATE;
    struct statfs fs;
    if (RAW_FSTATFS(fd, &fs) == 0 && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC)) return IO_EMULATE;
    int w = 0;
    lock_w();
    for (int i = 0; i < nwritten; i++)
        if (written[i].dev == st.st_dev && written[i].ino == st.st_ino) w = 1;
    unlock_w();
    if (w) return IO_EMULATE;
    note_reexec(fd, &st);
    return IO_REEXEC;
}

static int read_class(int fd) { return reprise_active() ? file_read_class(fd, reprise_read_flags()) : IO_EMULATE; }

/* For capture.rs (inside the SIGSYS handler: plain code, raw system calls only). */
int reprise_capture_read_class(int fd) { return file_read_class(fd, reprise_read_flags()); }
void reprise_capture_mark_written(int fd) { mark_written(fd); }
/* Replay of an open made inside stdio: descriptor `want` (the recording's) is the file itself
 * for reading when it can be opened, else /dev/null (a file opened for writing always: stdio's
 * writes then vanish; its reads come from the trace). */
void reprise_capture_replay_open(int dirfd, const char *path, int flags, int want)
{
    int writes = (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
    long fd = -1;
    if (!writes) fd = raw_syscall3(SYS_openat, dirfd, (long)path, (flags & O_CLOEXEC) | O_RDONLY);
    if (fd < 0) fd = raw_syscall3(SYS_openat, AT_FDCWD, (long)"/dev/null", (flags & O_CLOEXEC) | O_RDWR);
    if (fd >= 0 && fd != want) {
        raw_syscall3(SYS_dup3, fd, want, flags & O_CLOEXEC);
        raw_syscall3(SYS_close, fd, 0, 0);
    }
}

/* The hash of written and re-executed bytes (record and replay run this same code). Four
 * independent 64-bit lanes of 8-byte words (multiply, xor-shift), so it runs at several bytes
 * per cycle: FNV's one multiply per byte cost zstd -T2 a fifth of its native time on a 20 MB
 * input. Not cryptographic: it detects changed data, it does not resist a forger. */
static inline uint64_t hmix(uint64_t a, uint64_t w)
{
    a = (a ^ w) * 0x9fb21c651e98df25ull;
    return a ^ (a >> 29);
}
uint64_t reprise_hash_bytes(uint64_t seed, const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t a0 = seed ^ 0x243f6a8885a308d3ull, a1 = seed ^ 0x13198a2e03707344ull;
    uint64_t a2 = seed ^ 0xa4093822299f31d0ull, a3 = seed ^ 0x082efa98ec4e6c89ull;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        __builtin_memcpy(w, b + i, 32);
        a0 = hmix(a0, w[0]);
        a1 = hmix(a1, w[1]);
        a2 = hmix(a2, w[2]);
        a3 = hmix(a3, w[3]);
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        __builtin_memcpy(&w, b + i, 8);
        a0 = hmix(a0, w);
    }
    uint64_t tail = 0;
    for (int k = 0; i < n; i++, k++) tail |= (uint64_t)b[i] << (8 * k);
    a1 = hmix(a1, tail);
    uint64_t h = hmix(hmix(hmix(hmix(a0, a1), a2), a3), (uint64_t)n);
    return hmix(h, h >> 17);
}
static uint64_t hash_bytes(const void *p, size_t n) { return reprise_hash_bytes(0xcbf29ce484222325ull, p, n); }

/* A recorded result with errno: record logs it; replay returns the recorded one. */
static long io_result(long r, int err)
{
    r = (long)reprise_input((uint64_t)r);
    if (r < 0) errno = (int)reprise_input((uint64_t)err);
    return r;
}

/* Decide (record) or recall (replay) the class of a call. */
static int io_class(int live) { return (int)reprise_input((uint64_t)live); }

static void data_iov(const struct iovec *iov, int cnt, long total)
{
    for (int i = 0; i < cnt && total > 0; i++) {
        size_t n = iov[i].iov_len < (size_t)total ? iov[i].iov_len : (size_t)total;
        reprise_io_data(iov[i].iov_base, n);
        total -= (long)n;
    }
}
static uint64_t hash_iov(const struct iovec *iov, int cnt, long total)
{
    uint64_t h = 0;
    for (int i = 0; i < cnt && total > 0; i++) {
        size_t n = iov[i].iov_len < (size_t)total ? iov[i].iov_len : (size_t)total;
        h = h * 31 + hash_bytes(iov[i].iov_base, n);
        total -= (long)n;
    }
    return h;
}

/* Reads may block: they are safe points and hold no turn (each thread's data is its own). */
static long do_read(int fd, void *buf, size_t n, long (*real)(int, void *, size_t, void *), void *extra)
{
    if (!reprise_active()) return real(fd, buf, n, extra);
    reprise_safe_point();
    int cls = io_class(reprise_io_replaying() ? 0 : read_class(fd));
    if (cls == IO_EMULATE) {
        long r = -1;
        int e = 0;
        if (!reprise_io_replaying()) {
            CANCELLABLE(NULL, r = real(fd, buf, n, extra));
            e = errno;
        } else CANCEL_POINT();
        r = io_result(r, e);
        if (r > 0) reprise_io_data(buf, (size_t)r);
        return r;
    }
    long r;
    CANCEL_POINT();
    CANCELLABLE(NULL, r = real(fd, buf, n, extra));
    int e = errno;
    reprise_io_check((uint64_t)r, "the length of a re-executed file read (the file changed since the recording, or is missing: `record --portable` keeps the bytes read)");
    if (r > 0) reprise_io_check(hash_bytes(buf, (size_t)r), "the data of a re-executed file read (the file changed since the recording: `record --portable` keeps the bytes read)");
    errno = e;
    return r;
}

static long real_read_(int fd, void *b, size_t n, void *x)
{
    (void)x;
    REAL(ssize_t, read, (int, void *, size_t));
    return real_read(fd, b, n);
}
static long real_pread_(int fd, void *b, size_t n, void *x)
{
    REAL(ssize_t, pread, (int, void *, size_t, off_t));
    return real_pread(fd, b, n, *(off_t *)x);
}
struct recv_args { int flags; struct sockaddr *addr; socklen_t *alen; };
static long real_recvfrom_(int fd, void *b, size_t n, void *x)
{
    struct recv_args *a = x;
    REAL(ssize_t, recvfrom, (int, void *, size_t, int, struct sockaddr *, socklen_t *));
    return real_recvfrom(fd, b, n, a->flags, a->addr, a->alen);
}

ssize_t read(int fd, void *buf, size_t n) { return do_read(fd, buf, n, real_read_, NULL); }
ssize_t pread(int fd, void *buf, size_t n, off_t off) { return do_read(fd, buf, n, real_pread_, &off); }
ssize_t pread64(int fd, void *buf, size_t n, off_t off) { return do_read(fd, buf, n, real_pread_, &off); }
ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    struct recv_args a = {flags, NULL, NULL};
    return do_read(fd, buf, n, real_recvfrom_, &a);
}
ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen)
{
    struct recv_args a = {flags, addr, alen};
    long r = do_read(fd, buf, n, real_recvfrom_, &a);
    if (r >= 0 && addr && alen && reprise_active()) {
        *alen = (socklen_t)reprise_input((uint64_t)*alen);
        reprise_io_data(addr, *alen);
    }
    return r;
}
ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    REAL(ssize_t, readv, (int, const struct iovec *, int));
    if (!reprise_active()) return real_readv(fd, iov, cnt);
    reprise_safe_point();
    int cls = io_class(reprise_io_replaying() ? 0 : read_class(fd));
    if (cls == IO_EMULATE) {
        long r = -1;
        int e = 0;
        if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_readv(fd, iov, cnt)); e = errno; }
        else CANCEL_POINT();
        r = io_result(r, e);
        if (r > 0) data_iov(iov, cnt, r);
        return r;
    }
    long r;
    CANCEL_POINT();
    CANCELLABLE(NULL, r = real_readv(fd, iov, cnt));
    int e = errno;
    reprise_io_check((uint64_t)r, "the length of a re-executed file read (the file changed since the recording, or is missing: `record --portable` keeps the bytes read)");
    if (r > 0) reprise_io_check(hash_iov(iov, cnt, r), "the data of a re-executed file read (the file changed since the recording: `record --portable` keeps the bytes read)");
    errno = e;
    return r;
}

/* Writes. */
/* Replay of stdout/stderr: write the first `len` bytes of `buf` (or of the iovecs) completely,
 * waiting while a non-blocking descriptor is full; raw system calls, nothing recorded. */
static void put_all(int fd, const void *buf, const struct iovec *iov, int cnt, long len)
{
    int i = 0;
    const char *p = buf;
    size_t left = 0;
    if (!iov) left = (size_t)len;
    while (len > 0) {
        if (iov && left == 0) {
            if (i >= cnt) return;
            p = iov[i].iov_base;
            left = iov[i].iov_len;
            i++;
            continue;
        }
        size_t want = left < (size_t)len ? left : (size_t)len;
        long w = syscall(SYS_write, fd, p, want);
        if (w < 0 && errno == EAGAIN) {
            struct pollfd pf = { .fd = fd, .events = POLLOUT };
            syscall(SYS_poll, &pf, 1, -1);
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        left -= (size_t)w;
        len -= w;
    }
}

static long do_write(int fd, const void *buf, size_t n, long (*real)(int, const void *, size_t, void *), void *extra,
                     const struct iovec *iov, int cnt)
{
    if (!reprise_active()) return real(fd, buf, n, extra);
    /* Output to stdout/stderr is ordered per descriptor; other writes may block on a full
     * pipe or socket, so they are only safe points. */
    if (fd == 1 || fd == 2) reprise_fd_event(fd);
    else reprise_safe_point();
    uint64_t h = iov ? hash_iov(iov, cnt, (long)n) : hash_bytes(buf, n);
    int reproduce = io_class(fd == 1 || fd == 2) != 0;
    if (reproduce) {
        long r;
        int e;
        CANCEL_POINT();
        if (!reprise_io_replaying()) {
            CANCELLABLE(NULL, r = real(fd, buf, n, extra));
            e = errno;
            r = io_result(r, e);
        } else {
            /* The recorded result: a failed (EAGAIN on a non-blocking pipe) or short write is
             * reproduced as such, and exactly the recorded bytes go out. */
            r = io_result(0, 0);
            e = errno;
            if (r > 0) put_all(fd, iov ? NULL : buf, iov, cnt, r);
        }
        reprise_io_check(h, "the data written to stdout/stderr");
        errno = e;
        return r;
    }
    long r = 0;
    int e = 0;
    if (!reprise_io_replaying()) {
        CANCELLABLE(NULL, r = real(fd, buf, n, extra));
        e = errno;
        if (r > 0) mark_written(fd);
    } else CANCEL_POINT();
    reprise_io_check(h, "the data of a write (the program wrote something else)");
    return io_result(r, e);
}
static long real_write_(int fd, const void *b, size_t n, void *x)
{
    (void)x;
    REAL(ssize_t, write, (int, const void *, size_t));
    return real_write(fd, b, n);
}
static long real_pwrite_(int fd, const void *b, size_t n, void *x)
{
    REAL(ssize_t, pwrite, (int, const void *, size_t, off_t));
    return real_pwrite(fd, b, n, *(off_t *)x);
}
struct send_args { int flags; const struct sockaddr *addr; socklen_t alen; };
static long real_sendto_(int fd, const void *b, size_t n, void *x)
{
    struct send_args *a = x;
    REAL(ssize_t, sendto, (int, const void *, size_t, int, const struct sockaddr *, socklen_t));
    return real_sendto(fd, b, n, a->flags, a->addr, a->alen);
}
static long real_writev_(int fd, const void *b, size_t n, void *x)
{
    (void)n;
    REAL(ssize_t, writev, (int, const struct iovec *, int));
    return real_writev(fd, (const struct iovec *)b, *(int *)x);
}

ssize_t write(int fd, const void *buf, size_t n) { return do_write(fd, buf, n, real_write_, NULL, NULL, 0); }
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) { return do_write(fd, buf, n, real_pwrite_, &off, NULL, 0); }
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return do_write(fd, buf, n, real_pwrite_, &off, NULL, 0); }
ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    struct send_args a = {flags, NULL, 0};
    return do_write(fd, buf, n, real_sendto_, &a, NULL, 0);
}
ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t alen)
{
    struct send_args a = {flags, addr, alen};
    return do_write(fd, buf, n, real_sendto_, &a, NULL, 0);
}
ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    size_t total = 0;
    for (int i = 0; i < cnt; i++) total += iov[i].iov_len;
    return do_write(fd, iov, total, real_writev_, &cnt, iov, cnt);
}

/* Calls that allocate or free descriptor numbers are ordered on one object (fd_alloc_obj), so
 * numbers are the same in replay. */

/* Descriptors the runtime owns survive the program's close(). */
int close(int fd)
{
    REAL(int, close, (int));
    if (fd >= 1000 && fd <= 1003 && reprise_active()) return 0;
    reprise_ordered(&fd_alloc_obj);
    return real_close(fd);
}

/* In replay, a descriptor created by an emulated call is a placeholder with the recorded
 * number (so later open() calls return what they returned while recording). */
static int placeholder(int want)
{
    REAL(int, open, (const char *, int, ...));
    if (want < 0) return want;
    int fd = real_open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd >= 0 && fd != want) {
        RAW_DUP2(fd, want);
        REAL(int, close, (int));
        real_close(fd);
    }
    return want;
}

/* Socket calls that may block (connect) or need no order: safe points, recorded results. */
#define NET_RESULT(ret, name, params, args)                                 \
    ret name params                                                         \
    {                                                                       \
        REAL(ret, name, params);                                            \
        if (!reprise_active()) return real_##name args;                     \
        reprise_safe_point();                                               \
        long r = -1;                                                        \
        int e = 0;                                                          \
        if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = (long)real_##name args); e = errno; } \
        else CANCEL_POINT();                                                \
        return (ret)io_result(r, e);                                        \
    }
NET_RESULT(int, bind, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
NET_RESULT(int, listen, (int fd, int n), (fd, n))
NET_RESULT(int, connect, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
NET_RESULT(int, shutdown, (int fd, int how), (fd, how))
NET_RESULT(int, setsockopt, (int fd, int lv, int o, const void *v, socklen_t l), (fd, lv, o, v, l))

#define NET_FD(name, params, args)                                          \
    int name params                                                         \
    {                                                                       \
        REAL(int, name, params);                                            \
        if (!reprise_ordered(&fd_alloc_obj)) return real_##name args;       \
        if (!reprise_io_replaying()) {                                      \
            int r = real_##name args;                                       \
            return (int)io_result(r, errno);                                \
        }                                                                   \
        int r = (int)io_result(-1, 0);                                      \
        return placeholder(r);                                              \
    }
NET_FD(socket, (int d, int t, int p), (d, t, p))
NET_FD(epoll_create1, (int f), (f))
NET_FD(epoll_create, (int n), (n))

static int accept_common(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
    REAL(int, accept4, (int, struct sockaddr *, socklen_t *, int));
    if (!reprise_active()) return real_accept4(fd, addr, alen, flags);
    /* accept blocks: perform it with nothing held, then take the descriptor turn. */
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_accept4(fd, addr, alen, flags)); e = errno; }
    else CANCEL_POINT();
    reprise_ordered(&fd_alloc_obj);
    r = (int)io_result(r, e);
    if (r >= 0 && addr && alen) {
        *alen = (socklen_t)reprise_input((uint64_t)*alen);
        reprise_io_data(addr, *alen);
    }
    return reprise_io_replaying() ? placeholder(r) : r;
}
int accept(int fd, struct sockaddr *a, socklen_t *l) { return accept_common(fd, a, l, 0); }
int accept4(int fd, struct sockaddr *a, socklen_t *l, int f) { return accept_common(fd, a, l, f); }

#define NET_ADDR(name)                                                      \
    int name(int fd, struct sockaddr *addr, socklen_t *alen)                \
    {                                                                       \
        REAL(int, name, (int, struct sockaddr *, socklen_t *));             \
        if (!reprise_active()) return real_##name(fd, addr, alen);          \
        reprise_safe_point();                                               \
        int r = -1, e = 0;                                                  \
        if (!reprise_io_replaying()) { r = real_##name(fd, addr, alen); e = errno; } \
        r = (int)io_result(r, e);                                           \
        if (r == 0) {                                                       \
            *alen = (socklen_t)reprise_input((uint64_t)*alen);              \
            reprise_io_data(addr, *alen);                                   \
        }                                                                   \
        return r;                                                           \
    }
NET_ADDR(getsockname)
NET_ADDR(getpeername)

int getsockopt(int fd, int lv, int o, void *v, socklen_t *l)
{
    REAL(int, getsockopt, (int, int, int, void *, socklen_t *));
    if (!reprise_active()) return real_getsockopt(fd, lv, o, v, l);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { r = real_getsockopt(fd, lv, o, v, l); e = errno; }
    r = (int)io_result(r, e);
    if (r == 0) {
        *l = (socklen_t)reprise_input((uint64_t)*l);
        reprise_io_data(v, *l);
    }
    return r;
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    REAL(int, poll, (struct pollfd *, nfds_t, int));
    if (!reprise_active()) return real_poll(fds, n, timeout);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_poll(fds, n, timeout)); e = errno; }
    else CANCEL_POINT();
    r = (int)io_result(r, e);
    if (r >= 0) reprise_io_data(fds, n * sizeof *fds);
    return r;
}
int select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
    REAL(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *));
    if (!reprise_active()) return real_select(n, rd, wr, ex, tv);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_select(n, rd, wr, ex, tv)); e = errno; }
    else CANCEL_POINT();
    r = (int)io_result(r, e);
    if (r >= 0) {
        if (rd) reprise_io_data(rd, sizeof *rd);
        if (wr) reprise_io_data(wr, sizeof *wr);
        if (ex) reprise_io_data(ex, sizeof *ex);
    }
    return r;
}
int epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    REAL(int, epoll_ctl, (int, int, int, struct epoll_event *));
    if (!reprise_active()) return real_epoll_ctl(ep, op, fd, ev);
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { r = real_epoll_ctl(ep, op, fd, ev); e = errno; }
    return (int)io_result(r, e);
}
int epoll_wait(int ep, struct epoll_event *evs, int max, int timeout)
{
    REAL(int, epoll_wait, (int, struct epoll_event *, int, int));
    if (!reprise_active()) return real_epoll_wait(ep, evs, max, timeout);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_epoll_wait(ep, evs, max, timeout)); e = errno; }
    else CANCEL_POINT();
    r = (int)io_result(r, e);
    if (r > 0) reprise_io_data(evs, (size_t)r * sizeof *evs);
    return r;
}

/* open: in replay a file opened for writing is opened read-only (or a placeholder), so the
 * replay never creates, truncates or appends; the recorded descriptor number is kept. */
static int open_common(int dirfd, const char *path, int flags, mode_t mode, int at)
{
    REAL(int, openat, (int, const char *, int, ...));
    if (!reprise_ordered(&fd_alloc_obj)) return real_openat(dirfd, path, flags, mode);
    int writes = (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
    (void)at;
    if (!reprise_io_replaying()) {
        int r = real_openat(dirfd, path, flags, mode);
        int e = errno;
        if (r >= 0 && writes) mark_written(r);
        return (int)io_result(r, e);
    }
    int want = (int)io_result(-1, 0);
    if (want < 0) return want;
    int fd = writes ? real_openat(dirfd, path, (flags & O_CLOEXEC) | O_RDONLY) : real_openat(dirfd, path, flags, mode);
    if (fd < 0) return placeholder(want);
    if (fd != want) {
        RAW_DUP2(fd, want);
        REAL(int, close, (int));
        real_close(fd);
    }
    return want;
}
int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | __O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    return open_common(AT_FDCWD, path, flags, mode, 0);
}
int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | __O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    return open_common(AT_FDCWD, path, flags, mode, 0);
}
int openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | __O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    return open_common(dirfd, path, flags, mode, 1);
}

/* getrandom: recorded data. */
ssize_t getrandom(void *buf, size_t n, unsigned flags)
{
    REAL(ssize_t, getrandom, (void *, size_t, unsigned));
    if (!reprise_active()) return real_getrandom(buf, n, flags);
    long r = -1;
    int e = 0;
    if (!reprise_io_replaying()) { r = real_getrandom(buf, n, flags); e = errno; }
    r = io_result(r, e);
    if (r > 0) reprise_io_data(buf, (size_t)r);
    return r;
}

/* Changes to the file system besides writes (modes, owners, times, names, removal): revocable
 * like writes to files. Performed while recording with the result recorded; in replay not
 * performed (the replay must not change files: pbzip2 gives its output file the input's mode,
 * times and owner, and without the output file at replay those calls would fail and the
 * program take another path; zstd without -k removes its input), the recorded result
 * returned. Safe points (they may block on a slow file system). glibc's own calls inside
 * other functions do not come here. */
#include <utime.h>
#include <sys/time.h>
#define REVOCABLE(ret, name, params, args) \
    ret name params \
    { \
        REAL(ret, name, params); \
        if (!reprise_active()) return real_##name args; \
        reprise_safe_point(); \
        long r = -1; \
        int e = 0; \
        if (!reprise_io_replaying()) { r = (long)real_##name args; e = errno; } \
        return (ret)io_result(r, e); \
    }
REVOCABLE(int, chmod, (const char *path, mode_t mode), (path, mode))
REVOCABLE(int, fchmod, (int fd, mode_t mode), (fd, mode))
REVOCABLE(int, fchmodat, (int dirfd, const char *path, mode_t mode, int flags), (dirfd, path, mode, flags))
REVOCABLE(int, chown, (const char *path, uid_t u, gid_t g), (path, u, g))
REVOCABLE(int, lchown, (const char *path, uid_t u, gid_t g), (path, u, g))
REVOCABLE(int, fchown, (int fd, uid_t u, gid_t g), (fd, u, g))
REVOCABLE(int, fchownat, (int dirfd, const char *path, uid_t u, gid_t g, int flags), (dirfd, path, u, g, flags))
REVOCABLE(int, utime, (const char *path, const struct utimbuf *t), (path, t))
REVOCABLE(int, utimes, (const char *path, const struct timeval t[2]), (path, t))
REVOCABLE(int, utimensat, (int dirfd, const char *path, const struct timespec t[2], int flags), (dirfd, path, t, flags))
REVOCABLE(int, futimens, (int fd, const struct timespec t[2]), (fd, t))
REVOCABLE(int, unlink, (const char *path), (path))
REVOCABLE(int, unlinkat, (int dirfd, const char *path, int flags), (dirfd, path, flags))
REVOCABLE(int, rename, (const char *from, const char *to), (from, to))
REVOCABLE(int, renameat, (int fromfd, const char *from, int tofd, const char *to), (fromfd, from, tofd, to))
REVOCABLE(int, remove, (const char *path), (path))
REVOCABLE(int, rmdir, (const char *path), (path))
REVOCABLE(int, mkdir, (const char *path, mode_t mode), (path, mode))
REVOCABLE(int, mkdirat, (int dirfd, const char *path, mode_t mode), (dirfd, path, mode))
REVOCABLE(int, truncate, (const char *path, off_t len), (path, len))
REVOCABLE(int, link, (const char *from, const char *to), (from, to))
REVOCABLE(int, symlink, (const char *from, const char *to), (from, to))

/* A path's status (stat, lstat, fstatat and glibc's older __xstat64/__lxstat64 entries):
 * recordable, the result and the structure recorded, given back in replay. A program checks
 * its output file with them before changing its mode, owner and times (zstd: only when it is a
 * regular file): the replay, which writes no file, must see what the recording saw. */
#define RECORDED_STAT(name, params, args, st, size) \
    int name params \
    { \
        REAL(int, name, params); \
        if (!reprise_active()) return real_##name args; \
        reprise_safe_point(); \
        long r = -1; \
        int e = 0; \
        if (!reprise_io_replaying()) { r = (long)real_##name args; e = errno; } \
        r = io_result(r, e); \
        if (r == 0) reprise_io_data((void *)(st), size); \
        return (int)r; \
    }
RECORDED_STAT(stat, (const char *path, struct stat *st), (path, st), st, sizeof(struct stat))
RECORDED_STAT(lstat, (const char *path, struct stat *st), (path, st), st, sizeof(struct stat))
RECORDED_STAT(fstatat, (int dirfd, const char *path, struct stat *st, int flags), (dirfd, path, st, flags), st,
              sizeof(struct stat))
RECORDED_STAT(stat64, (const char *path, struct stat64 *st), (path, st), st, sizeof(struct stat64))
RECORDED_STAT(lstat64, (const char *path, struct stat64 *st), (path, st), st, sizeof(struct stat64))
RECORDED_STAT(__xstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st), st, sizeof(struct stat64))
RECORDED_STAT(__lxstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st), st, sizeof(struct stat64))

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
extern void reprise_thread_finish(void);
extern void reprise_pthread_exit_begin(void);

struct end_guard { int returned; };
static void thread_finish_cleanup(struct end_guard *g)
{
    if (!g->returned && !exit_seen) reprise_cancel_unseen();
    reprise_thread_finish();
}

void *reprise_trampoline(void *slot)
{
    void *arg;
    void *(*start)(void *) = (void *(*)(void *))reprise_thread_begin(slot, &arg);
    struct end_guard g __attribute__((cleanup(thread_finish_cleanup))) = {0};
    void *r = start(arg);
    g.returned = 1;
    return r;
}

void pthread_exit(void *r)
{
    REAL(void, pthread_exit, (void *));
    exit_seen = 1;
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
    case PRE_CANCEL: cancel_now();
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
        case PRE_CANCEL: cancel_now(); \
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
        case PRE_CANCEL: cancel_now(); \
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
        case PRE_CANCEL: cancel_now(); \
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

/* ---- names: the program's own definitions win ---------------------------------------------------
 * Every libc name the runtime defines is weak, so a program may define its own `send`, `read`,
 * `time`, `free` ... (a function or a variable), as it may with glibc alone: its definition is
 * then the one linked, for its own code, and the runtime does not see those calls (they are
 * not libc's). The C interposers of this file are weak (#pragma weak below); the Rust ones are
 * exported as `reprise_<name>` and reached through the weak stubs here. */
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
#pragma weak _IO_putc
#pragma weak __fprintf_chk
#pragma weak __printf_chk
#pragma weak __vfprintf_chk
#pragma weak __vprintf_chk
#pragma weak accept
#pragma weak accept4
#pragma weak bind
#pragma weak clock
#pragma weak clock_gettime
#pragma weak clock_nanosleep
#pragma weak close
#pragma weak connect
#pragma weak drand48
#pragma weak epoll_create
#pragma weak epoll_create1
#pragma weak epoll_ctl
#pragma weak epoll_wait
#pragma weak execv
#pragma weak execve
#pragma weak execvp
#pragma weak execvpe
#pragma weak fflush
#pragma weak fgetc
#pragma weak fgets
#pragma weak fprintf
#pragma weak fputc
#pragma weak fputs
#pragma weak fread
#pragma weak fwrite
#pragma weak getc
#pragma weak getpeername
#pragma weak getpid
#pragma weak getppid
#pragma weak getrandom
#pragma weak remove
#pragma weak rmdir
#pragma weak mkdir
#pragma weak mkdirat
#pragma weak truncate
#pragma weak link
#pragma weak symlink
#pragma weak stat
#pragma weak lstat
#pragma weak fstatat
#pragma weak stat64
#pragma weak lstat64
#pragma weak __xstat64
#pragma weak __lxstat64
#pragma weak chmod
#pragma weak fchmod
#pragma weak fchmodat
#pragma weak chown
#pragma weak lchown
#pragma weak fchown
#pragma weak fchownat
#pragma weak utime
#pragma weak utimes
#pragma weak utimensat
#pragma weak futimens
#pragma weak unlink
#pragma weak unlinkat
#pragma weak rename
#pragma weak renameat
#pragma weak getsockname
#pragma weak getsockopt
#pragma weak gettid
#pragma weak gettimeofday
#pragma weak lcong48
#pragma weak listen
#pragma weak lrand48
#pragma weak mrand48
#pragma weak nanosleep
#pragma weak open
#pragma weak open64
#pragma weak openat
#pragma weak perror
#pragma weak poll
#pragma weak popen
#pragma weak posix_spawn
#pragma weak posix_spawnp
#pragma weak pread
#pragma weak pread64
#pragma weak printf
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
#pragma weak putc
#pragma weak putchar
#pragma weak puts
#pragma weak pwrite
#pragma weak pwrite64
#pragma weak rand
#pragma weak random
#pragma weak read
#pragma weak readv
#pragma weak recv
#pragma weak recvfrom
#pragma weak sched_getcpu
#pragma weak seed48
#pragma weak select
#pragma weak sem_clockwait
#pragma weak sem_timedwait
#pragma weak sem_wait
#pragma weak send
#pragma weak sendto
#pragma weak setsockopt
#pragma weak shutdown
#pragma weak sleep
#pragma weak socket
#pragma weak srand
#pragma weak srand48
#pragma weak srandom
#pragma weak syscall
#pragma weak system
#pragma weak time
#pragma weak times
#pragma weak usleep
#pragma weak vfprintf
#pragma weak vprintf
#pragma weak write
#pragma weak writev
#pragma weak __fgets_chk
#pragma weak fgets_unlocked
#pragma weak __fgets_unlocked_chk
#pragma weak _IO_getc
#pragma weak getchar
#pragma weak fgetc_unlocked
#pragma weak getc_unlocked
#pragma weak getchar_unlocked
#pragma weak __uflow
#pragma weak __underflow
#pragma weak ungetc
#pragma weak __fread_chk
#pragma weak fread_unlocked
#pragma weak __fread_unlocked_chk
#pragma weak getline
#pragma weak getdelim
#pragma weak __getdelim
#pragma weak fseek
#pragma weak fseeko
#pragma weak fseeko64
#pragma weak ftell
#pragma weak ftello
#pragma weak ftello64
#pragma weak rewind
#pragma weak fgetpos
#pragma weak fsetpos
#pragma weak fopen
#pragma weak fopen64
#pragma weak fdopen
#pragma weak freopen
#pragma weak freopen64
#pragma weak fclose
#pragma weak reprise_scanf_gnu
#pragma weak reprise_fscanf_gnu
#pragma weak reprise_scanf_c99
#pragma weak reprise_fscanf_c99
#pragma weak reprise_vscanf_gnu
#pragma weak reprise_vfscanf_gnu
#pragma weak reprise_vscanf_c99
#pragma weak reprise_vfscanf_c99
