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
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
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

/* How a read of fd goes (decided while recording). */
extern int reprise_hash_reads(void);

static int read_class(int fd)
{
    if (fd == 0 || !reprise_hash_reads()) return IO_EMULATE;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return IO_EMULATE;
    struct statfs fs;
    if (fstatfs(fd, &fs) == 0 && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC)) return IO_EMULATE;
    int w = 0;
    lock_w();
    for (int i = 0; i < nwritten; i++)
        if (written[i].dev == st.st_dev && written[i].ino == st.st_ino) w = 1;
    unlock_w();
    return w ? IO_EMULATE : IO_REEXEC;
}

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h ^ n;
}

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
            r = real(fd, buf, n, extra);
            e = errno;
        }
        r = io_result(r, e);
        if (r > 0) reprise_io_data(buf, (size_t)r);
        return r;
    }
    long r = real(fd, buf, n, extra);
    int e = errno;
    reprise_io_check((uint64_t)r, "the length of a re-executed file read (the file changed since the recording)");
    if (r > 0) reprise_io_check(hash_bytes(buf, (size_t)r), "the data of a re-executed file read (the file changed since the recording)");
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
        if (!reprise_io_replaying()) { r = real_readv(fd, iov, cnt); e = errno; }
        r = io_result(r, e);
        if (r > 0) data_iov(iov, cnt, r);
        return r;
    }
    long r = real_readv(fd, iov, cnt);
    int e = errno;
    reprise_io_check((uint64_t)r, "the length of a re-executed file read (the file changed since the recording)");
    if (r > 0) reprise_io_check(hash_iov(iov, cnt, r), "the data of a re-executed file read (the file changed since the recording)");
    errno = e;
    return r;
}

/* Writes. */
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
        long r = real(fd, buf, n, extra);
        int e = errno;
        reprise_io_check((uint64_t)r, "a write to stdout/stderr");
        reprise_io_check(h, "the data written to stdout/stderr");
        errno = e;
        return r;
    }
    long r = 0;
    int e = 0;
    if (!reprise_io_replaying()) {
        r = real(fd, buf, n, extra);
        e = errno;
        if (r > 0) mark_written(fd);
    }
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

/* Calls that allocate or free descriptor numbers are ordered on one object, so numbers are
 * the same in replay. */
static char fd_alloc_obj;

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
        dup2(fd, want);
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
        if (!reprise_io_replaying()) { r = (long)real_##name args; e = errno; } \
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
    if (!reprise_io_replaying()) { r = real_accept4(fd, addr, alen, flags); e = errno; }
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
    if (!reprise_io_replaying()) { r = real_poll(fds, n, timeout); e = errno; }
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
    if (!reprise_io_replaying()) { r = real_select(n, rd, wr, ex, tv); e = errno; }
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
    if (!reprise_io_replaying()) { r = real_epoll_wait(ep, evs, max, timeout); e = errno; }
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
        dup2(fd, want);
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
 * built with -fexceptions), and its end is a cleanup of the trampoline's frame: it runs when the
 * start routine returns and when an unwind passes, after every handler of the program's own. */
#include <pthread.h>
extern void *reprise_thread_begin(void *slot, void **arg);
extern void reprise_thread_finish(void);
extern void reprise_pthread_exit_begin(void);

static void thread_finish_cleanup(char *unused)
{
    (void)unused;
    reprise_thread_finish();
}

void *reprise_trampoline(void *slot)
{
    void *arg;
    void *(*start)(void *) = (void *(*)(void *))reprise_thread_begin(slot, &arg);
    char guard __attribute__((cleanup(thread_finish_cleanup))) = 0;
    (void)guard;
    return start(arg);
}

void pthread_exit(void *r)
{
    REAL(void, pthread_exit, (void *));
    reprise_pthread_exit_begin();
    real_pthread_exit(r);
    __builtin_unreachable();
}
