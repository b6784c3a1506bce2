/* shim_fdio.c: reads and writes on file descriptors, descriptor allocation (close, open) and
 * getrandom; the helpers shim_net.c shares (shim.h). */
#include "shim.h"

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

enum { IO_EMULATE = 1, IO_REEXEC = 2, IO_PIPE = 3, IO_PIPE_SHARED = 4 };

/* Files (dev, inode) this program wrote while recording: their reads and mappings are
 * recorded. Past NWRITTEN files (a database's many table files) every file counts as written:
 * its reads are recorded, which is always exact, only larger. */
#define NWRITTEN 4096
static struct { dev_t dev; ino_t ino; } written[NWRITTEN];
static int nwritten;
static int written_full;
static int written_lock;

static void lock_w(void) { shim_lock(&written_lock); }
static void unlock_w(void) { shim_unlock(&written_lock); }

void reprise_shim_mark_written(int fd)
{
    struct stat st;
    if (RAW_FSTAT(fd, &st) != 0) return;
    if (S_ISFIFO(st.st_mode)) reprise_shim_pipe_written(&st);
    if (!S_ISREG(st.st_mode)) return;
    lock_w();
    int found = 0;
    for (int i = 0; i < nwritten; i++)
        if (written[i].dev == st.st_dev && written[i].ino == st.st_ino) found = 1;
    if (!found && nwritten < NWRITTEN) {
        written[nwritten].dev = st.st_dev;
        written[nwritten].ino = st.st_ino;
        nwritten++;
    } else if (!found) {
        written_full = 1;
    }
    unlock_w();
}

/* How a read of fd goes (decided while recording; replay follows the recorded class).
 * A pipe the program made and never wrote into (a child writes it: shim_child.c) is IO_PIPE:
 * recorded, and drained in replay as the child writes it again. Repeatable (re-executed in
 * replay, its length and a hash of its bytes checked) when fd is a regular file (not stdin,
 * /proc or /sys) the program has not opened for writing, and either `--hash-reads` was given
 * or the file is large (REEXEC_FILE_SIZE at the read: recording the bytes of large inputs
 * dominates the cost of recording programs that read them); never with `--portable`.
 * Otherwise recordable (the bytes go to the trace). */
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

/* Devices (st_dev) known to be /proc or /sys (1) or neither (0): a file system's type is its
 * device's, so one fstatfs per device, not one per read (xz reads its input 8 KiB at a time:
 * 2562 fstatfs calls on one file). */
static struct { dev_t dev; int pseudo; } fs_kinds[32];
static int nfs_kinds;

static int pseudo_fs(int fd, dev_t dev)
{
    lock_w();
    for (int i = 0; i < nfs_kinds; i++)
        if (fs_kinds[i].dev == dev) { int p = fs_kinds[i].pseudo; unlock_w(); return p; }
    unlock_w();
    struct statfs fs;
    if (RAW_FSTATFS(fd, &fs) != 0) return 0;
    int p = fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC;
    lock_w();
    if (nfs_kinds < 32) {
        fs_kinds[nfs_kinds].dev = dev;
        fs_kinds[nfs_kinds].pseudo = p;
        nfs_kinds++;
    }
    unlock_w();
    return p;
}

/* Whether the program wrote this file (its reads are recorded, never re-executed). */
static int wrote(const struct stat *st)
{
    int w = 0;
    lock_w();
    if (written_full) w = 1;
    for (int i = 0; i < nwritten; i++)
        if (written[i].dev == st->st_dev && written[i].ino == st->st_ino) w = 1;
    unlock_w();
    return w;
}

static int file_read_class(int fd, int rf)
{
    struct stat st;
    if (RAW_FSTAT(fd, &st) != 0) return IO_EMULATE;
    int pk = reprise_shim_pipe_reads(&st);
    if (pk != PIPE_OWN) return pk == PIPE_FROM_CHILD ? IO_PIPE : IO_PIPE_SHARED;
    if (fd == 0 || (rf & RF_PORTABLE) || !S_ISREG(st.st_mode)) return IO_EMULATE;
    if (!(rf & RF_HASH_ALL) && st.st_size < REEXEC_FILE_SIZE) return IO_EMULATE;
    if (pseudo_fs(fd, st.st_dev)) return IO_EMULATE;
    if (wrote(&st)) return IO_EMULATE;
    note_reexec(fd, &st);
    return IO_REEXEC;
}

/* Whether the regular file of status `st` is one the program wrote (while recording). */
SHIM_HIDDEN int reprise_shim_wrote(const struct stat *st) { return S_ISREG(st->st_mode) && wrote(st); }

/* A regular file (not /proc or /sys, not one the program wrote) the program reads another
 * way (a mapping, shim_fs.c): its identity sent as a re-executed read's. */
SHIM_HIDDEN void reprise_shim_note_input(int fd)
{
    struct stat st;
    if (reprise_active() && !reprise_io_replaying() && RAW_FSTAT(fd, &st) == 0 &&
        S_ISREG(st.st_mode) && !pseudo_fs(fd, st.st_dev) && !wrote(&st))
        note_reexec(fd, &st);
}

static int read_class(int fd) { return reprise_active() ? file_read_class(fd, reprise_read_flags()) : IO_EMULATE; }

/* For capture.rs (inside the SIGSYS handler: plain code, raw system calls only). */
int reprise_capture_read_class(int fd) { return file_read_class(fd, reprise_read_flags()); }
void reprise_capture_mark_written(int fd) { reprise_shim_mark_written(fd); }
void reprise_capture_drain(int fd, void *buf, size_t cap, long want, int wait) { reprise_shim_drain_how(fd, buf, cap, want, wait); }
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
long reprise_shim_io_result(long r, int err)
{
    r = (long)reprise_call_result((uint64_t)r);
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

/* Replay of a read of class `cls` into `buf` (`n` bytes): a child's pipe is drained by the
 * read's recorded count, waiting for the child that writes it again; a pipe the program writes
 * and shares with a child (IO_PIPE_SHARED, whose writes replay performs) by what is there.
 * Called before the read's result entry, where the recording read. */
static void replay_drain(int cls, int fd, void *buf, size_t n)
{
    if (cls == IO_PIPE || cls == IO_PIPE_SHARED)
        reprise_shim_drain_how(fd, buf, n, (long)reprise_peek_result((uint64_t)-1), cls == IO_PIPE);
}

/* Reads may block: they are safe points and hold no turn (each thread's data is its own). */
static long do_read(int fd, void *buf, size_t n, long (*real)(int, void *, size_t, void *), void *extra)
{
    if (!reprise_active()) return real(fd, buf, n, extra);
    reprise_safe_point();
    int cls = io_class(reprise_io_replaying() ? 0 : read_class(fd));
    if (cls != IO_REEXEC) {
        long r = -1;
        int e = 0;
        /* What the read's SIGSYS would do, without the signal; in replay too, which makes no
         * read: a runtime entry is a position signals are delivered at (signals.rs). */
        reprise_safe_point();
        if (!reprise_io_replaying()) {
            CANCELLABLE(NULL, r = real(fd, buf, n, extra));
            e = errno;
        } else {
            CANCEL_POINT();
            /* A child's pipe: what the child writes again is read here, before the result's
             * entry, where the recording read it (shim_child.c). */
            replay_drain(cls, fd, buf, n);
        }
        r = reprise_shim_io_result(r, e);
        if (r > 0) reprise_io_data(buf, (size_t)r);
        return r;
    }
    long r;
    CANCEL_POINT();
    reprise_safe_point(); /* what the read's SIGSYS would do, without the signal */
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
    if (cls != IO_REEXEC) {
        long r = -1;
        int e = 0;
        if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_readv(fd, iov, cnt)); e = errno; }
        else {
            CANCEL_POINT();
            int i = 0;
            while (i < cnt - 1 && iov[i].iov_len == 0) i++;
            if (cnt > 0) replay_drain(cls, fd, iov[i].iov_base, iov[i].iov_len);
        }
        r = reprise_shim_io_result(r, e);
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
 * waiting while a non-blocking descriptor is full; raw system calls, nothing recorded, none
 * trapped (sud.rs: a trapped one was a runtime entry the recording's real write did not make). */
extern long reprise_untrapped_syscall3(long n, long a1, long a2, long a3);
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
        long w = reprise_untrapped_syscall3(SYS_write, fd, (long)p, (long)want);
        if (w == -EAGAIN) {
            struct pollfd pf = { .fd = fd, .events = POLLOUT };
            reprise_untrapped_syscall3(SYS_poll, (long)&pf, 1, -1);
            continue;
        }
        if (w == -EINTR) continue;
        if (w <= 0) return;
        p += w;
        left -= (size_t)w;
        len -= w;
    }
}

/* A write's class, past the streams 1 and 2: a pipe that feeds a child, which replay runs
 * again, so replay performs the write again (shim_child.c). */
#define OUT_CHILD 3

/* The stream (1 or 2) a descriptor writes to when it is standard output or error under
 * another number (open("/dev/stdout"), dup(1): samtools index -o /dev/stdout): the same file
 * (device and inode: the launcher's pipe); OUT_CHILD for a pipe that feeds a child; else 0.
 * Recording only. */
int reprise_capture_out_stream(int fd)
{
    if (fd == 1 || fd == 2) return fd;
    struct stat a, b;
    if (fd < 0 || RAW_FSTAT(fd, &a) != 0) return 0;
    for (int s = 1; s <= 2; s++)
        if (RAW_FSTAT(s, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_mode == b.st_mode) return s;
    return reprise_shim_feeds_child(&a) ? OUT_CHILD : 0;
}

static long do_write(int fd, const void *buf, size_t n, long (*real)(int, const void *, size_t, void *), void *extra,
                     const struct iovec *iov, int cnt)
{
    if (!reprise_active()) return real(fd, buf, n, extra);
    /* Output to stdout/stderr (under its own number or another: the class says which
     * stream, 0 for neither) is reproduced, ordered per stream; other writes may block on a
     * full pipe or socket, so they are only safe points, and among them a child's input
     * (OUT_CHILD) is performed again in replay. */
    int live = fd == 1 || fd == 2 ? fd : reprise_io_replaying() || (extra && !iov) ? 0 : reprise_capture_out_stream(fd);
    int stream = io_class(live);
    int child = stream == OUT_CHILD;
    if (child) stream = 0;
    if (stream) reprise_fd_event(stream);
    else reprise_safe_point();
    uint64_t h = iov ? hash_iov(iov, cnt, (long)n) : hash_bytes(buf, n);
    if (stream) {
        long r;
        int e;
        CANCEL_POINT();
        if (!reprise_io_replaying()) {
            CANCELLABLE(NULL, r = real(fd, buf, n, extra));
            e = errno;
            r = reprise_shim_io_result(r, e);
        } else {
            /* The recorded result: a failed (EAGAIN on a non-blocking pipe) or short write is
             * reproduced as such, and exactly the recorded bytes go out. */
            r = reprise_shim_io_result(0, 0);
            e = errno;
            if (r > 0) put_all(stream, iov ? NULL : buf, iov, cnt, r);
        }
        reprise_io_check(h, "the data written to stdout/stderr");
        errno = e;
        return r;
    }
    long r = 0;
    int e = 0;
    /* What the write's SIGSYS would do, without the signal; in replay too (see do_read). */
    reprise_safe_point();
    if (!reprise_io_replaying()) {
        /* Before the write: a thread reading the pipe must not take the bytes of an unmarked
         * write for a child's (shim_child.c). */
        reprise_shim_mark_written(fd);
        CANCELLABLE(NULL, r = real(fd, buf, n, extra));
        e = errno;
    } else CANCEL_POINT();
    reprise_io_check(h, "the data of a write (the program wrote something else)");
    r = reprise_shim_io_result(r, e);
    /* A child's input: the recorded bytes go into the pipe again, for the child that runs
     * again (it would wait for them, or see an early end of file). */
    if (child && r > 0 && reprise_io_replaying()) {
        e = errno;
        put_all(fd, iov ? NULL : buf, iov, cnt, r);
        errno = e;
    }
    return r;
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

/* Calls that allocate or free descriptor numbers are ordered on one object
 * (reprise_shim_fd_alloc_obj), so numbers are the same in replay. */
char reprise_shim_fd_alloc_obj;

/* getrandom: recorded data. */
ssize_t getrandom(void *buf, size_t n, unsigned flags)
{
    REAL(ssize_t, getrandom, (void *, size_t, unsigned));
    if (!reprise_active()) return real_getrandom(buf, n, flags);
    long r = -1;
    int e = 0;
    if (!reprise_io_replaying()) { r = real_getrandom(buf, n, flags); e = errno; }
    r = reprise_shim_io_result(r, e);
    if (r > 0) reprise_io_data(buf, (size_t)r);
    return r;
}

/* The C interposers of this file (the tests check that the archive defines no libc name
 * strongly). */
#pragma weak getrandom
#pragma weak pread
#pragma weak pread64
#pragma weak pwrite
#pragma weak pwrite64
#pragma weak read
#pragma weak readv
#pragma weak recv
#pragma weak recvfrom
#pragma weak send
#pragma weak sendto
#pragma weak write
#pragma weak writev
