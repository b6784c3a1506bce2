/* shim_stdio.c: stdio and the libc random-number state, each call an ordered event on its
 * object's stripe; stdio input captured (shim.h says why these exist). */
#include "shim.h"

/* Named by `reprise cc` (-u): this object is linked into every program, also into one that
 * calls stdio only from a shared library (C++ iostreams: libstdc++'s std::cin calls getc and
 * ungetc, which must reach the interposers below, or replay reads nothing). */
void reprise_stdio_linked(void) {}

/* ---- stdio: ordered per FILE ------------------------------------------------------------ */

/* After the real call: its turn released, the thread free (reprise_safe_point). Held to the
 * thread's next runtime entry instead, a turn stayed taken for as long as the thread then
 * waited outside the runtime: an OpenMP thread that printed and then slept in libgomp's
 * barrier or thread pool kept stdout's turn, and the next printf of another thread waited for
 * it forever (a recording hung). */
static inline void call_done(void)
{
    int e = errno;
    reprise_safe_point();
    errno = e;
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    REAL(int, vfprintf, (FILE *, const char *, va_list));
    reprise_ordered(f);
    int r = real_vfprintf(f, fmt, ap);
    call_done();
    return r;
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
    int r = real___vfprintf_chk(f, flag, fmt, ap);
    call_done();
    return r;
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
        ret r_ = real_##name args; \
        call_done(); \
        return r_; \
    }
#define ORDERED_VOID(name, params, args, obj) \
    void name params \
    { \
        REAL(void, name, params); \
        reprise_ordered(obj); \
        real_##name args; \
        call_done(); \
    }

ORDERED(int, puts, (const char *s), (s), stdout)
ORDERED(int, fputs, (const char *s, FILE *f), (s, f), f)
ORDERED(int, fputc, (int c, FILE *f), (c, f), f)
ORDERED(int, putc, (int c, FILE *f), (c, f), f)
ORDERED(int, _IO_putc, (int c, FILE *f), (c, f), f)
ORDERED(int, putchar, (int c), (c), stdout)
ORDERED(size_t, fwrite, (const void *p, size_t s, size_t n, FILE *f), (p, s, n, f), f)
ORDERED(int, fflush, (FILE *f), (f), f ? (const void *)f : (const void *)stdout)
ORDERED_VOID(perror, (const char *s), (s), stderr)

/* ---- stdio input, fopen and fclose: ordered per FILE, and every system call inside captured
 * (capture.rs): the bytes stdio reads from a file, pipe or tty, what it asks about the
 * descriptor, the descriptor fopen gets. A call on a FILE takes its turn; fopen/fclose take the
 * descriptor-allocation turn; the _unlocked forms (used under the program's flockfile) take none. */
extern int reprise_capture_begin(const void *obj);
extern void reprise_capture_end(int began);

#define INPUT(ret, name, params, args, obj) \
    ret name params \
    { \
        REAL(ret, name, params); \
        int c_ = reprise_capture_begin(obj); \
        ret r_ = real_##name args; \
        reprise_capture_end(c_); \
        call_done(); \
        return r_; \
    }
#define INPUT_VOID(name, params, args, obj) \
    void name params \
    { \
        REAL(void, name, params); \
        int c_ = reprise_capture_begin(obj); \
        real_##name args; \
        reprise_capture_end(c_); \
        call_done(); \
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
INPUT(FILE *, fopen, (const char *p, const char *m), (p, m), &reprise_shim_fd_alloc_obj)
INPUT(FILE *, fopen64, (const char *p, const char *m), (p, m), &reprise_shim_fd_alloc_obj)
INPUT(FILE *, fdopen, (int fd, const char *m), (fd, m), &reprise_shim_fd_alloc_obj)
INPUT(FILE *, freopen, (const char *p, const char *m, FILE *f), (p, m, f), &reprise_shim_fd_alloc_obj)
INPUT(FILE *, freopen64, (const char *p, const char *m, FILE *f), (p, m, f), &reprise_shim_fd_alloc_obj)
INPUT(int, fclose, (FILE *f), (f), &reprise_shim_fd_alloc_obj)

/* The scanf family, under their symbol names (stdio.h redirects scanf to __isoc99_scanf in C99
 * mode, so each wrapper names its symbol explicitly); every variant reaches the real v*f* form. */
typedef int (*vfscanf_fn)(FILE *, const char *, va_list);
static int scan(const char *vsym, vfscanf_fn *slot, FILE *f, const char *fmt, va_list ap)
{
    if (!*slot) *slot = (vfscanf_fn)dlsym(RTLD_NEXT, vsym);
    int c_ = reprise_capture_begin(f);
    int r_ = (*slot)(f, fmt, ap);
    reprise_capture_end(c_);
    call_done();
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

/* ---- directories: listed through captured calls ------------------------------------------
 * opendir, readdir and the rest read the directory with libc's own getdents64, which no
 * interposer sees: captured like stdio input (capture.rs), so the entries read are recorded
 * data and replay lists what the recording listed, whatever the directory holds now (or
 * without it). opendir, fdopendir and closedir take the descriptor-allocation turn; a read of
 * a stream takes the stream's. */
#include <dirent.h>
#include <ftw.h>
#include <glob.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
INPUT(DIR *, opendir, (const char *p), (p), &reprise_shim_fd_alloc_obj)
INPUT(DIR *, fdopendir, (int fd), (fd), &reprise_shim_fd_alloc_obj)
INPUT(int, closedir, (DIR *d), (d), &reprise_shim_fd_alloc_obj)
INPUT(struct dirent *, readdir, (DIR *d), (d), d)
INPUT(struct dirent64 *, readdir64, (DIR *d), (d), d)
INPUT(int, readdir_r, (DIR *d, struct dirent *e, struct dirent **r), (d, e, r), d)
INPUT(int, readdir64_r, (DIR *d, struct dirent64 *e, struct dirent64 **r), (d, e, r), d)
INPUT_VOID(rewinddir, (DIR *d), (d), d)
INPUT_VOID(seekdir, (DIR *d, long at), (d, at), d)
/* scandir lists with libc's own opendir and readdir; its filter and comparison run the
 * program's code inside the captured call (their own system calls captured too). */
typedef int (*scan_filter)(const struct dirent *);
typedef int (*scan_cmp)(const struct dirent **, const struct dirent **);
typedef int (*scan_filter64)(const struct dirent64 *);
typedef int (*scan_cmp64)(const struct dirent64 **, const struct dirent64 **);
INPUT(int, scandir, (const char *p, struct dirent ***l, scan_filter f, scan_cmp c), (p, l, f, c), &reprise_shim_fd_alloc_obj)
INPUT(int, scandir64, (const char *p, struct dirent64 ***l, scan_filter64 f, scan_cmp64 c), (p, l, f, c), &reprise_shim_fd_alloc_obj)
/* nftw and ftw walk a tree with libc's own opendir, readdir and fstatat, captured like the
 * calls above; the program's callback runs between them as program code: outside the capture
 * (its own calls interposed as anywhere else) and holding no turn. The callback of the walk in
 * progress is the thread's (`walk_fn`), saved and restored around a walk, so a walk inside a
 * callback works too. */
typedef int (*nftw_fn)(const char *, const struct stat *, int, struct FTW *);
typedef int (*ftw_fn)(const char *, const struct stat *, int);
/* (struct stat64 is struct stat on x86-64.) */
typedef int (*nftw64_fn)(const char *, const struct stat64 *, int, struct FTW *);
typedef int (*ftw64_fn)(const char *, const struct stat64 *, int);
static __thread void *walk_fn;
static __thread int walk_began;
static int walk_step(const char *p, const struct stat *st, int type, struct FTW *f)
{
    reprise_capture_end(walk_began);
    int r = f ? ((nftw_fn)walk_fn)(p, st, type, f) : ((ftw_fn)walk_fn)(p, st, type);
    walk_began = reprise_capture_begin(&reprise_shim_fd_alloc_obj);
    return r;
}
static int ftw_step(const char *p, const struct stat *st, int type)
{
    return walk_step(p, st, type, NULL);
}
#define WALK(name, fn_t, params, args)                                                      \
    int name params                                                                         \
    {                                                                                       \
        REAL(int, name, params);                                                            \
        void *saved = walk_fn;                                                              \
        int saved_began = walk_began;                                                       \
        walk_fn = (void *)f;                                                                \
        walk_began = reprise_capture_begin(&reprise_shim_fd_alloc_obj);                    \
        int r_ = real_##name args;                                                          \
        reprise_capture_end(walk_began);                                                    \
        walk_fn = saved;                                                                    \
        walk_began = saved_began;                                                           \
        call_done();                                                                        \
        return r_;                                                                          \
    }
WALK(nftw, nftw_fn, (const char *p, nftw_fn f, int n, int fl), (p, walk_step, n, fl))
WALK(nftw64, nftw64_fn, (const char *p, nftw64_fn f, int n, int fl), (p, (nftw64_fn)walk_step, n, fl))
WALK(ftw, ftw_fn, (const char *p, ftw_fn f, int n), (p, ftw_step, n))
WALK(ftw64, ftw64_fn, (const char *p, ftw64_fn f, int n), (p, (ftw64_fn)ftw_step, n))
/* glob reads directories the same way; its error callback (rarely given) runs inside. */
typedef int (*glob_err)(const char *, int);
INPUT(int, glob, (const char *p, int fl, glob_err e, glob_t *g), (p, fl, e, g), &reprise_shim_fd_alloc_obj)
INPUT(int, glob64, (const char *p, int fl, glob_err e, glob64_t *g), (p, fl, e, g), &reprise_shim_fd_alloc_obj)
#pragma GCC diagnostic pop
#pragma weak opendir
#pragma weak fdopendir
#pragma weak closedir
#pragma weak readdir
#pragma weak readdir64
#pragma weak readdir_r
#pragma weak readdir64_r
#pragma weak rewinddir
#pragma weak seekdir
#pragma weak scandir
#pragma weak scandir64
#pragma weak nftw
#pragma weak nftw64
#pragma weak ftw
#pragma weak ftw64
#pragma weak glob
#pragma weak glob64

/* ---- libc random state: one ordered object ------------------------------------------------ */

static char rng_state_obj;
ORDERED(int, rand, (void), (), &rng_state_obj)
ORDERED_VOID(srand, (unsigned s), (s), &rng_state_obj)
ORDERED(long, random, (void), (), &rng_state_obj)
ORDERED_VOID(srandom, (unsigned s), (s), &rng_state_obj)
ORDERED(double, drand48, (void), (), &rng_state_obj)
ORDERED(long, lrand48, (void), (), &rng_state_obj)
ORDERED(long, mrand48, (void), (), &rng_state_obj)
ORDERED_VOID(srand48, (long s), (s), &rng_state_obj)
ORDERED(unsigned short *, seed48, (unsigned short s[3]), (s), &rng_state_obj)
ORDERED_VOID(lcong48, (unsigned short p[7]), (p), &rng_state_obj)

/* ---- std::random_device: its values recorded -------------------------------------------------
 * libstdc++'s random_device reads the CPU's rdrand (an instruction nothing can trap) or
 * getrandom; its inline operator() calls these exported members, so they are interposed like
 * libc calls (this object is linked into every `reprise cc` program) and their values are
 * recorded, given back in replay without the call. */
RECORDED_VALUE(unsigned int, _ZNSt13random_device9_M_getvalEv, (void *self), (self), 0)
RECORDED_VALUE(unsigned int, _ZNSt13random_device16_M_getval_pretr1Ev, (void *self), (self), 0)
#pragma weak _ZNSt13random_device9_M_getvalEv
#pragma weak _ZNSt13random_device16_M_getval_pretr1Ev

/* glibc's arc4random family and getentropy draw from the kernel inside libc (the getrandom
 * system call, not the interposed getrandom function): their values recorded alike. */
RECORDED_VALUE(uint32_t, arc4random, (void), (), 0)
RECORDED_VALUE(uint32_t, arc4random_uniform, (uint32_t bound), (bound), 0)
RECORDED_OUT(int, getentropy, (void *buf, size_t n), (buf, n), buf, n)
void arc4random_buf(void *buf, size_t n)
{
    REAL(void, arc4random_buf, (void *, size_t));
    if (!reprise_active_init()) {
        real_arc4random_buf(buf, n);
        return;
    }
    reprise_safe_point();
    if (!reprise_io_replaying()) real_arc4random_buf(buf, n);
    reprise_io_data(buf, n);
}
#pragma weak arc4random
#pragma weak arc4random_uniform
#pragma weak arc4random_buf
#pragma weak getentropy

/* The C interposers of this file (the tests check that the archive defines no libc name
 * strongly). */
#pragma weak _IO_putc
#pragma weak __fprintf_chk
#pragma weak __printf_chk
#pragma weak __vfprintf_chk
#pragma weak __vprintf_chk
#pragma weak drand48
#pragma weak fflush
#pragma weak fgetc
#pragma weak fgets
#pragma weak fprintf
#pragma weak fputc
#pragma weak fputs
#pragma weak fread
#pragma weak fwrite
#pragma weak getc
#pragma weak lcong48
#pragma weak lrand48
#pragma weak mrand48
#pragma weak perror
#pragma weak printf
#pragma weak putc
#pragma weak putchar
#pragma weak puts
#pragma weak rand
#pragma weak random
#pragma weak seed48
#pragma weak srand
#pragma weak srand48
#pragma weak srandom
#pragma weak vfprintf
#pragma weak vprintf
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
