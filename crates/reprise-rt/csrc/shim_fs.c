/* shim_fs.c: changes to the file system besides writes, and path status calls (shim.h). */
#include "shim.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <utime.h>

/* Changes to the file system besides writes (modes, owners, times, names, removal): revocable
 * like writes to files. Performed while recording with the result recorded; in replay not
 * performed (the replay must not change files: pbzip2 gives its output file the input's mode,
 * times and owner, and without the output file at replay those calls would fail and the
 * program take another path; zstd without -k removes its input), the recorded result
 * returned. Safe points (they may block on a slow file system). glibc's own calls inside
 * other functions do not come here. RESULT_OF with `in_replay` performs the call in replay
 * too, its result still the recorded one (PERFORMED_RECORDED, below). */
#define RESULT_OF(ret, name, params, args, in_replay) \
    ret name params \
    { \
        REAL(ret, name, params); \
        if (!reprise_active()) return real_##name args; \
        reprise_safe_point(); \
        long r = -1; \
        int e = 0; \
        if ((in_replay) || !reprise_io_replaying()) { r = (long)real_##name args; e = errno; } \
        return (ret)reprise_shim_io_result(r, e); \
    }
#define REVOCABLE(ret, name, params, args) RESULT_OF(ret, name, params, args, 0)
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
/* Calls on a descriptor the program opened for writing, which replay opens read-only (or as
 * the /dev/null placeholder: shim_fdio.c), where they would fail (leveldb locks its LOCK file
 * with fcntl(F_SETLK) on an O_RDWR descriptor, and syncs its logs with fdatasync): sizes,
 * space, locks and syncs are revocable too. */
REVOCABLE(int, ftruncate, (int fd, off_t len), (fd, len))
REVOCABLE(int, ftruncate64, (int fd, off_t len), (fd, len))
REVOCABLE(int, posix_fallocate, (int fd, off_t off, off_t len), (fd, off, len))
REVOCABLE(int, posix_fallocate64, (int fd, off_t off, off_t len), (fd, off, len))
REVOCABLE(int, fallocate, (int fd, int mode, off_t off, off_t len), (fd, mode, off, len))
REVOCABLE(int, fallocate64, (int fd, int mode, off_t off, off_t len), (fd, mode, off, len))
REVOCABLE(int, lockf, (int fd, int cmd, off_t len), (fd, cmd, len))
REVOCABLE(int, lockf64, (int fd, int cmd, off_t len), (fd, cmd, len))
REVOCABLE(int, flock, (int fd, int op), (fd, op))
REVOCABLE(int, fsync, (int fd), (fd))
REVOCABLE(int, fdatasync, (int fd), (fd))
REVOCABLE(int, syncfs, (int fd), (fd))
REVOCABLE(int, sync_file_range, (int fd, off_t off, off_t n, unsigned flags), (fd, off, n, flags))
REVOCABLE(int, msync, (void *a, size_t n, int flags), (a, n, flags))
/* Whether a path may be accessed: a recorded result, as a path's status is (shim below). A
 * program checks whether its files exist with it, and replay sees the files the recording left
 * behind (leveldb's FileExists(CURRENT) found the recording's database and took another way).
 * Not a change; the same macro because the same record: the result and errno. */
REVOCABLE(int, access, (const char *path, int mode), (path, mode))
REVOCABLE(int, faccessat, (int dirfd, const char *path, int mode, int flags), (dirfd, path, mode, flags))
REVOCABLE(int, euidaccess, (const char *path, int mode), (path, mode))
REVOCABLE(int, eaccess, (const char *path, int mode), (path, mode))

/* The working directory: changed in replay too, when it can be (relative paths then resolve
 * as they did), but the program is given the recorded result: the directory it entered while
 * recording may be gone at replay (a test's scratch directory) or be another. */
#define PERFORMED_RECORDED(ret, name, params, args) RESULT_OF(ret, name, params, args, 1)
PERFORMED_RECORDED(int, chdir, (const char *path), (path))
PERFORMED_RECORDED(int, fchdir, (int fd), (fd))
/* A descriptor's offset, the same way: replay moves it (a re-executed read reads from there),
 * but the program is given the recorded offset: the descriptor may be replay's placeholder
 * for a file the recording wrote and removed (samtools sort reopens its temporary files and
 * htslib checks their end with lseek(fd, -28, SEEK_END): 0 on the placeholder, and the
 * replay took another path). */
PERFORMED_RECORDED(off_t, lseek, (int fd, off_t off, int whence), (fd, off, whence))
PERFORMED_RECORDED(off_t, lseek64, (int fd, off_t off, int whence), (fd, off, whence))

/* fcntl's record locks (F_SETLK and its kin) are revocable, and what F_GETLK finds is
 * recorded; every other command (descriptor flags, pipe sizes) runs as it is, a duplicate in
 * its descriptor-allocation turn. */
static int lock_cmd(int cmd)
{
    return cmd == F_GETLK || cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_GETLK || cmd == F_OFD_SETLK ||
           cmd == F_OFD_SETLKW;
}
static int fcntl_common(int fd, int cmd, unsigned long arg, int (*real)(int, int, ...))
{
    /* A duplicate takes the descriptor-allocation turn, as dup does (shim_fdio.c). */
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) reprise_ordered(&reprise_shim_fd_alloc_obj);
    if (!lock_cmd(cmd) || !reprise_active()) return real(fd, cmd, arg);
    reprise_safe_point();
    long r = -1;
    int e = 0;
    if (!reprise_io_replaying()) { r = real(fd, cmd, arg); e = errno; }
    r = reprise_shim_io_result(r, e);
    if (r == 0 && (cmd == F_GETLK || cmd == F_OFD_GETLK)) reprise_io_data((void *)arg, sizeof(struct flock));
    return (int)r;
}
/* The third argument is an int or a pointer; both travel in the same register. */
#define FCNTL(name)                                              \
    int name(int fd, int cmd, ...)                               \
    {                                                            \
        REAL(int, name, (int, int, ...));                        \
        va_list ap;                                              \
        va_start(ap, cmd);                                       \
        unsigned long arg = va_arg(ap, unsigned long);           \
        va_end(ap);                                              \
        return fcntl_common(fd, cmd, arg, real_##name);          \
    }
FCNTL(fcntl)
FCNTL(fcntl64)

/* A path's status (stat, lstat, fstatat and glibc's older __xstat64/__lxstat64 entries):
 * recordable, the result and the structure recorded, given back in replay. A program checks
 * its output file with them before changing its mode, owner and times (zstd: only when it is a
 * regular file): the replay, which writes no file, must see what the recording saw. */
#define RECORDED_STAT(name, params, args, st, size) RECORDED_OUT(int, name, params, args, st, size)
RECORDED_STAT(stat, (const char *path, struct stat *st), (path, st), st, sizeof(struct stat))
RECORDED_STAT(lstat, (const char *path, struct stat *st), (path, st), st, sizeof(struct stat))
RECORDED_STAT(fstatat, (int dirfd, const char *path, struct stat *st, int flags), (dirfd, path, st, flags), st,
              sizeof(struct stat))
RECORDED_STAT(stat64, (const char *path, struct stat64 *st), (path, st), st, sizeof(struct stat64))
RECORDED_STAT(lstat64, (const char *path, struct stat64 *st), (path, st), st, sizeof(struct stat64))
RECORDED_STAT(__xstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st), st, sizeof(struct stat64))
RECORDED_STAT(__lxstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st), st, sizeof(struct stat64))
RECORDED_STAT(fstatat64, (int dirfd, const char *path, struct stat64 *st, int flags), (dirfd, path, st, flags), st,
              sizeof(struct stat64))
RECORDED_STAT(__xstat, (int ver, const char *path, struct stat *st), (ver, path, st), st, sizeof(struct stat))
RECORDED_STAT(__lxstat, (int ver, const char *path, struct stat *st), (ver, path, st), st, sizeof(struct stat))
RECORDED_STAT(__fxstatat, (int ver, int dirfd, const char *path, struct stat *st, int flags), (ver, dirfd, path, st, flags),
              st, sizeof(struct stat))
RECORDED_STAT(__fxstatat64, (int ver, int dirfd, const char *path, struct stat64 *st, int flags),
              (ver, dirfd, path, st, flags), st, sizeof(struct stat64))
/* statx (glibc 2.28; coreutils, and the status calls of programs in other languages). */
RECORDED_STAT(statx, (int dirfd, const char *path, int flags, unsigned mask, struct statx *st),
              (dirfd, path, flags, mask, st), st, sizeof(struct statx))
/* A link's target: recorded, the bytes given back in replay (the link may be one the
 * recording made and removed: symlink and unlink are revocable). */
static ssize_t readlink_common(int dirfd, const char *path, char *buf, size_t size)
{
    REAL(ssize_t, readlinkat, (int, const char *, char *, size_t));
    if (!reprise_active_init()) return real_readlinkat(dirfd, path, buf, size);
    reprise_safe_point();
    long r = -1;
    int e = 0;
    if (!reprise_io_replaying()) { r = real_readlinkat(dirfd, path, buf, size); e = errno; }
    r = reprise_shim_io_result(r, e);
    if (r > 0) reprise_io_data(buf, (size_t)r);
    return r;
}
ssize_t readlink(const char *path, char *buf, size_t size) { return readlink_common(AT_FDCWD, path, buf, size); }
ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t size) { return readlink_common(dirfd, path, buf, size); }

/* A descriptor's status, too: in replay stdin may be another file than the recording's (sort
 * sized its buffer from fstat(0) and its reads diverged when replayed with stdin from a
 * terminal), and a file the program opened for writing is a placeholder (cp checks its
 * destination with fstat). */
RECORDED_STAT(fstat, (int fd, struct stat *st), (fd, st), st, sizeof(struct stat))
RECORDED_STAT(fstat64, (int fd, struct stat64 *st), (fd, st), st, sizeof(struct stat64))
RECORDED_STAT(__fxstat64, (int ver, int fd, struct stat64 *st), (ver, fd, st), st, sizeof(struct stat64))
RECORDED_STAT(__fxstat, (int ver, int fd, struct stat *st), (ver, fd, st), st, sizeof(struct stat))

/* A file system's status (free space, block size, name length): recorded like a file's. Free
 * space moves between a recording and its replay (the trace itself is being written), and
 * programs act on it: lrzip checks that its output's file system has room before it compresses
 * or decompresses to a file, and every replay of that diverged. */
RECORDED_STAT(statfs, (const char *path, struct statfs *st), (path, st), st, sizeof(struct statfs))
RECORDED_STAT(fstatfs, (int fd, struct statfs *st), (fd, st), st, sizeof(struct statfs))
RECORDED_STAT(statfs64, (const char *path, struct statfs64 *st), (path, st), st, sizeof(struct statfs64))
RECORDED_STAT(fstatfs64, (int fd, struct statfs64 *st), (fd, st), st, sizeof(struct statfs64))
RECORDED_STAT(statvfs, (const char *path, struct statvfs *st), (path, st), st, sizeof(struct statvfs))
RECORDED_STAT(fstatvfs, (int fd, struct statvfs *st), (fd, st), st, sizeof(struct statvfs))
RECORDED_STAT(statvfs64, (const char *path, struct statvfs64 *st), (path, st), st, sizeof(struct statvfs64))
RECORDED_STAT(fstatvfs64, (int fd, struct statvfs64 *st), (fd, st), st, sizeof(struct statvfs64))

/* Weak, as every libc name a shim file defines (shim_names.c says why). */
#pragma weak remove
#pragma weak ftruncate
#pragma weak ftruncate64
#pragma weak posix_fallocate
#pragma weak posix_fallocate64
#pragma weak fallocate
#pragma weak fallocate64
#pragma weak lockf
#pragma weak lockf64
#pragma weak flock
#pragma weak fsync
#pragma weak fdatasync
#pragma weak syncfs
#pragma weak sync_file_range
#pragma weak msync
#pragma weak access
#pragma weak faccessat
#pragma weak euidaccess
#pragma weak eaccess
#pragma weak fcntl
#pragma weak fcntl64
#pragma weak chdir
#pragma weak lseek
#pragma weak lseek64
#pragma weak fchdir
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
#pragma weak fstat
#pragma weak fstat64
#pragma weak __fxstat64
#pragma weak __fxstat
#pragma weak fstatat64
#pragma weak __xstat
#pragma weak __lxstat
#pragma weak __fxstatat
#pragma weak __fxstatat64
#pragma weak statx
#pragma weak statfs
#pragma weak fstatfs
#pragma weak statfs64
#pragma weak fstatfs64
#pragma weak statvfs
#pragma weak fstatvfs
#pragma weak statvfs64
#pragma weak fstatvfs64
#pragma weak readlink
#pragma weak readlinkat
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

/* mmap of a file: the program reads the file through the mapping. A file the recording's
 * program changes is mapped from the trace: standard input (which replay does not have) and
 * any file the program wrote or opened for writing (replay performs none of those writes and
 * removes none of those files: leveldb maps the table files it wrote, and compaction removes
 * them). Their mapped bytes are recorded like bytes read, and replay maps them anonymously
 * (private: the program's stores through a shared writable mapping change memory only, as
 * replay's writes change no file). Any other file replay maps again; a regular file's identity
 * is sent as a re-executed read's is (replay refuses a missing or changed file before it
 * starts, and names it, instead of diverging later). Which way a mapping went is recorded. */
/* Record the data of a recorded mapping `p` of [off, off + k) of `fd`, extent by extent:
 * holes (SEEK_HOLE) read as zeros, which replay's anonymous mapping already is, so a file the
 * program sized with ftruncate and fills through the mapping costs the trace nothing (a
 * scientific code's gigabytes of output). Each extent: its start and length, then its bytes;
 * -1 ends. The descriptor's offset is restored. */
static void record_extents(int fd, const char *p, off_t off, long k)
{
    long cur = raw_syscall3(SYS_lseek, fd, 0, SEEK_CUR);
    long pos = off, end = off + k;
    while (pos < end) {
        long d = raw_syscall3(SYS_lseek, fd, pos, SEEK_DATA);
        if (d == -ENXIO || d >= end) break;
        long h = d < 0 ? end : raw_syscall3(SYS_lseek, fd, d, SEEK_HOLE);
        if (d < 0) d = pos; /* (no SEEK_DATA here: all data) */
        if (h < 0 || h > end) h = end;
        reprise_input((uint64_t)(d - off));
        reprise_input((uint64_t)(h - d));
        reprise_io_data((void *)(p + (d - off)), (size_t)(h - d));
        pos = h;
    }
    reprise_input((uint64_t)-1);
    if (cur >= 0) raw_syscall3(SYS_lseek, fd, cur, SEEK_SET);
}
static void replay_extents(char *p)
{
    for (;;) {
        int64_t start = (int64_t)reprise_input(0);
        if (start < 0) return;
        size_t len = (size_t)reprise_input(0);
        reprise_io_data(p + start, len);
    }
}

static void *mmap_common(void *a, size_t n, int prot, int flags, int fd, off_t off,
                         void *(*real)(void *, size_t, int, int, int, off_t))
{
    if (fd < 0 || (flags & MAP_ANONYMOUS) || !reprise_active()) return real(a, n, prot, flags, fd, off);
    reprise_safe_point();
    if (!reprise_io_replaying()) {
        struct stat st;
        int file = RAW_FSTAT(fd, &st) == 0 && S_ISREG(st.st_mode);
        if (!file || (fd != 0 && !reprise_shim_wrote(&st))) {
            reprise_shim_io_result(-2, 0);
            if (fd != 0) reprise_shim_note_input(fd);
            return real(a, n, prot, flags, fd, off);
        }
        void *p = real(a, n, prot, flags, fd, off);
        if (p == MAP_FAILED) return (void *)reprise_shim_io_result(-1, errno); /* MAP_FAILED */
        long k = off < st.st_size ? (long)(st.st_size - off) : 0;
        if ((size_t)k > n) k = (long)n;
        reprise_shim_io_result(k, 0);
        reprise_input((uint64_t)p);
        /* (Readable while its bytes are recorded, whatever the program asked.) */
        if (!(prot & PROT_READ)) mprotect(p, n, prot | PROT_READ);
        record_extents(fd, p, off, k);
        if (!(prot & PROT_READ)) mprotect(p, n, prot);
        return p;
    }
    long k = reprise_shim_io_result(-1, 0);
    if (k == -2) return real(a, n, prot, flags, fd, off);
    if (k < 0) return MAP_FAILED;
    /* At the recorded address: the kernel places a file's mapping and an anonymous one of the
     * same size differently (a file's large mapping is aligned to 2 MiB), and the program keeps
     * and compares pointers into it. */
    void *at = (void *)reprise_input(0);
    void *p = real(at, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    /* (Taken in replay: a fixed mapping replaces what is there, as it did; any other goes
     * where the kernel puts it, and a pointer kept into it diverges, found as any other.) */
    if (p == MAP_FAILED) p = real(a, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (flags & MAP_FIXED), -1, 0);
    if (p == MAP_FAILED) return p;
    replay_extents(p);
    if (prot != (PROT_READ | PROT_WRITE)) mprotect(p, n, prot);
    return p;
}
void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    REAL(void *, mmap, (void *, size_t, int, int, int, off_t));
    return mmap_common(a, n, prot, flags, fd, off, real_mmap);
}
void *mmap64(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    REAL(void *, mmap64, (void *, size_t, int, int, int, off_t));
    return mmap_common(a, n, prot, flags, fd, off, real_mmap64);
}
#pragma weak mmap
#pragma weak mmap64

/* mkstemp and its family create a file under a name libc draws at random, through its own
 * open (no interposer sees it). Recorded: the descriptor (in descriptor-allocation order) and
 * the name written into the template. Replay creates nothing: the descriptor is a placeholder
 * (the program's reads of a file it wrote are recorded) and the name the recorded one, so a
 * replay leaves no file behind (the program's unlink is not performed in replay). */
#define MKSTEMP(name, params, args)                                                   \
    int name params                                                                   \
    {                                                                                 \
        REAL(int, name, params);                                                      \
        if (!reprise_ordered(&reprise_shim_fd_alloc_obj)) return real_##name args;      \
        size_t len = strlen(t);                                                       \
        long r = -1;                                                                  \
        int e = 0;                                                                    \
        if (!reprise_io_replaying()) {                                                \
            r = real_##name args;                                                     \
            e = errno;                                                                \
            if (r >= 0) reprise_shim_mark_written((int)r);                            \
        } else {                                                                      \
            reprise_fd_hold_begin();                                                  \
        }                                                                             \
        r = reprise_shim_io_result(r, e);                                             \
        if (r < 0) return reprise_shim_placeholder((int)r);                           \
        reprise_io_data(t, len);                                                      \
        return reprise_io_replaying() ? reprise_shim_placeholder((int)r) : (int)r;    \
    }
MKSTEMP(mkstemp, (char *t), (t))
MKSTEMP(mkstemp64, (char *t), (t))
MKSTEMP(mkostemp, (char *t, int flags), (t, flags))
MKSTEMP(mkostemp64, (char *t, int flags), (t, flags))
MKSTEMP(mkstemps, (char *t, int suffix), (t, suffix))
MKSTEMP(mkstemps64, (char *t, int suffix), (t, suffix))
MKSTEMP(mkostemps, (char *t, int suffix, int flags), (t, suffix, flags))
MKSTEMP(mkostemps64, (char *t, int suffix, int flags), (t, suffix, flags))
/* mkdtemp creates a directory under a name libc draws at random, with its own mkdir. Recorded:
 * the result and the name written into the template; replay creates nothing and gives the
 * recorded name (what the program then does in the directory is revocable or recorded, as
 * anywhere). */
char *mkdtemp(char *t)
{
    REAL(char *, mkdtemp, (char *));
    if (!reprise_active()) return real_mkdtemp(t);
    reprise_safe_point();
    size_t len = strlen(t);
    long r = -1;
    int e = 0;
    if (!reprise_io_replaying()) {
        r = real_mkdtemp(t) ? 0 : -1;
        e = errno;
    }
    if (reprise_shim_io_result(r, e) < 0) return NULL;
    reprise_io_data(t, len);
    return t;
}
#pragma weak mkdtemp
#pragma weak mkstemp
#pragma weak mkstemp64
#pragma weak mkostemp
#pragma weak mkostemp64
#pragma weak mkstemps
#pragma weak mkstemps64
#pragma weak mkostemps
#pragma weak mkostemps64
