/* shim_fdalloc.c: descriptor allocation (shim.h): close, open, the calls that make
 * descriptors replay makes again for real, and replay's placeholders. Every one takes the
 * descriptor-allocation turn (reprise_shim_fd_alloc_obj, shim_fdio.c), so numbers are the
 * same in replay. */
#include "shim.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

/* Descriptors the runtime owns survive the program's close(). */
int close(int fd)
{
    REAL(int, close, (int));
    if (fd >= 1000 && fd <= 1003 && reprise_active()) return 0;
    reprise_ordered(&reprise_shim_fd_alloc_obj);
    return real_close(fd);
}

/* Calls that make descriptors replay makes again for real (pipes, duplicates, event and
 * timer descriptors, ...): ordered on the descriptor-allocation turn, as open and close are,
 * so that replay allocates the recording's numbers in the recording's order. Unordered, a
 * pipe made by one thread took the number another thread's replayed open then claimed with
 * dup2, closing the pipe's end under the program (fd_race.c: 7 replays in 10 diverged). */
#define FD_ORDERED(ret, name, params, args)                 \
    ret name params                                        \
    {                                                      \
        REAL(ret, name, params);                           \
        reprise_ordered(&reprise_shim_fd_alloc_obj);       \
        return real_##name args;                           \
    }
/* Pipes: noted while recording, for the reads of the ones a child writes (shim_child.c). */
int pipe(int p[2])
{
    REAL(int, pipe, (int *));
    reprise_ordered(&reprise_shim_fd_alloc_obj);
    int r = real_pipe(p);
    if (r == 0) reprise_shim_pipe_made(p);
    return r;
}
int pipe2(int p[2], int flags)
{
    REAL(int, pipe2, (int *, int));
    reprise_ordered(&reprise_shim_fd_alloc_obj);
    int r = real_pipe2(p, flags);
    if (r == 0) reprise_shim_pipe_made(p);
    return r;
}
FD_ORDERED(int, dup, (int fd), (fd))
FD_ORDERED(int, dup2, (int fd, int to), (fd, to))
FD_ORDERED(int, dup3, (int fd, int to, int flags), (fd, to, flags))
FD_ORDERED(int, eventfd, (unsigned v, int flags), (v, flags))
FD_ORDERED(int, memfd_create, (const char *name, unsigned flags), (name, flags))
FD_ORDERED(int, timerfd_create, (int clock, int flags), (clock, flags))
FD_ORDERED(int, signalfd, (int fd, const sigset_t *mask, int flags), (fd, mask, flags))
FD_ORDERED(int, inotify_init, (void), ())
FD_ORDERED(int, inotify_init1, (int flags), (flags))
FD_ORDERED(int, socketpair, (int d, int t, int pr, int sv[2]), (d, t, pr, sv))

/* In replay, a descriptor created by an emulated call is a placeholder with the recorded
 * number (so later open() calls return what they returned while recording). */
int reprise_shim_placeholder(int want)
{
    REAL(int, open, (const char *, int, ...));
    if (want >= 0) {
        int fd = real_open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd >= 0 && fd != want) {
            RAW_DUP2(fd, want);
            REAL(int, close, (int));
            real_close(fd);
        }
    }
    reprise_fd_hold_end();
    return want;
}

/* open: in replay a file opened for writing is opened read-only (or a placeholder), so the
 * replay never creates, truncates or appends; the recorded descriptor number is kept. A file
 * opened write-only is always the placeholder (/dev/null): stdio's writes on it (fdopen, then
 * fwrite) are glibc's own system calls, performed in replay as while recording, and must
 * succeed as they did, not fail on a read-only descriptor because the recording's output file
 * is still there (zstd -o FILE, replayed right after its recording, diverged). */
static int open_common(int dirfd, const char *path, int flags, mode_t mode, int at)
{
    REAL(int, openat, (int, const char *, int, ...));
    if (!reprise_ordered(&reprise_shim_fd_alloc_obj)) return real_openat(dirfd, path, flags, mode);
    int writes = (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
    (void)at;
    if (!reprise_io_replaying()) {
        int r = real_openat(dirfd, path, flags, mode);
        int e = errno;
        if (r >= 0 && writes) reprise_shim_mark_written(r);
        return (int)reprise_shim_io_result(r, e);
    }
    reprise_fd_hold_begin();
    int want = (int)reprise_shim_io_result(-1, 0);
    if (want < 0 || (flags & O_ACCMODE) == O_WRONLY) return reprise_shim_placeholder(want);
    int fd = writes ? real_openat(dirfd, path, (flags & O_CLOEXEC) | O_RDONLY) : real_openat(dirfd, path, flags, mode);
    if (fd < 0) return reprise_shim_placeholder(want);
    if (fd != want) {
        RAW_DUP2(fd, want);
        REAL(int, close, (int));
        real_close(fd);
    }
    reprise_fd_hold_end();
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


/* The C interposers of this file (weak: shim_names.c says why). */
#pragma weak close
#pragma weak pipe
#pragma weak pipe2
#pragma weak dup
#pragma weak dup2
#pragma weak dup3
#pragma weak eventfd
#pragma weak memfd_create
#pragma weak timerfd_create
#pragma weak signalfd
#pragma weak inotify_init
#pragma weak inotify_init1
#pragma weak socketpair
#pragma weak open
#pragma weak open64
#pragma weak openat
