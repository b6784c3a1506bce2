/* shim_copy.c: copies the kernel makes between descriptors (copy_file_range, sendfile) and the
 * file-cloning ioctls (shim.h). */
#include "shim.h"
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

/* ---- copies made by the kernel (copy_file_range, sendfile) --------------------------------
 * The program never sees the bytes, so in replay they are not copied: the recorded result is
 * returned (and a given offset's new value), and an input descriptor read at its own position
 * moves on as the copy moved it. The destination is marked written, as by write(). Into stdout
 * or stderr the bytes are output, which the replay must produce: there the copy is made by the
 * interposed read() and write(), each recorded (or re-executed) and replayed as such. */
static long copy_through(int out, int in, off_t *off, size_t len)
{
    char buf[16384];
    size_t n = len < sizeof buf ? len : sizeof buf;
    long r = off ? pread(in, buf, n, *off) : read(in, buf, n);
    if (r <= 0) return r;
    long w = write(out, buf, (size_t)r);
    if (w > 0 && off) *off += w;
    return w;
}
static long kernel_copy_end(long r, int in, off_t *off_in, off_t *off_out, int out)
{
    if (r > 0 && !reprise_io_replaying()) reprise_shim_mark_written(out);
    if (r > 0) {
        if (off_in) reprise_io_data(off_in, sizeof *off_in);
        else if (reprise_io_replaying()) raw_syscall3(SYS_lseek, in, r, SEEK_CUR);
        if (off_out) reprise_io_data(off_out, sizeof *off_out);
    }
    return r;
}
ssize_t copy_file_range(int in, off_t *off_in, int out, off_t *off_out, size_t len, unsigned flags)
{
    REAL(ssize_t, copy_file_range, (int, off_t *, int, off_t *, size_t, unsigned));
    if (!reprise_active()) return real_copy_file_range(in, off_in, out, off_out, len, flags);
    if ((out == 1 || out == 2) && !off_out) return copy_through(out, in, off_in, len);
    reprise_safe_point();
    long r = -1;
    int e = 0;
    if (!reprise_io_replaying()) { r = real_copy_file_range(in, off_in, out, off_out, len, flags); e = errno; }
    r = reprise_shim_io_result(r, e);
    e = errno;
    r = kernel_copy_end(r, in, off_in, off_out, out);
    errno = e;
    return r;
}
ssize_t sendfile(int out, int in, off_t *off, size_t len)
{
    REAL(ssize_t, sendfile, (int, int, off_t *, size_t));
    if (!reprise_active()) return real_sendfile(out, in, off, len);
    if (out == 1 || out == 2) return copy_through(out, in, off, len);
    reprise_safe_point();
    long r = -1;
    int e = 0;
    if (!reprise_io_replaying()) { r = real_sendfile(out, in, off, len); e = errno; }
    r = reprise_shim_io_result(r, e);
    e = errno;
    r = kernel_copy_end(r, in, off, NULL, out);
    errno = e;
    return r;
}
ssize_t sendfile64(int out, int in, off_t *off, size_t len) { return sendfile(out, in, off, len); }

/* ioctl: the file-cloning requests change the destination file, like a write: performed while
 * recording with the result recorded, not in replay (cp tries FICLONE first, and its replay
 * on a placeholder got another error and took another path). Every other request runs. */
int ioctl(int fd, unsigned long req, ...)
{
    REAL(int, ioctl, (int, unsigned long, void *));
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    int clone = req == FICLONE || req == FICLONERANGE || req == FIDEDUPERANGE;
    if (!clone || !reprise_active()) return real_ioctl(fd, req, arg);
    reprise_safe_point();
    long r = -1;
    int e = 0;
    if (!reprise_io_replaying()) { r = real_ioctl(fd, req, arg); e = errno; }
    if (!reprise_io_replaying() && r == 0) reprise_shim_mark_written(fd);
    r = reprise_shim_io_result(r, e);
    if (req == FIDEDUPERANGE && r == 0) {
        struct file_dedupe_range *d = arg;
        reprise_io_data(d, sizeof *d + d->dest_count * sizeof d->info[0]);
    }
    return (int)r;
}

/* The C interposers of this file (the tests check that the archive defines no libc name
 * strongly). */
#pragma weak copy_file_range
#pragma weak ioctl
#pragma weak sendfile
#pragma weak sendfile64
