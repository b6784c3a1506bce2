#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* Fixed-seed 64-bit LCG (Knuth MMIX constants); returns 31 high bits. */
static inline uint32_t lcg_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}
static inline double lcg_unit(uint64_t *s) /* [0,1) */
{
    return lcg_next(s) * (1.0 / 2147483648.0);
}

static void parse_args(int argc, char **argv, int *t, long *n)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            *t = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            *n = atol(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [-t threads] [-n size]\n", argv[0]);
            exit(2);
        }
    }
    if (*t < 1 || *t > 256 || *n < 1) {
        fprintf(stderr, "%s: bad arguments\n", argv[0]);
        exit(2);
    }
}

static void *xmalloc(size_t sz)
{
    void *p = malloc(sz ? sz : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* Contiguous block partition of [0,total) by thread index. */
static inline void part(long total, int tid, int nt, long *lo, long *hi)
{
    *lo = total * tid / nt;
    *hi = total * (tid + 1) / nt;
}

/*
 * fft: parallel iterative radix-2 complex FFT (SPLASH-2 style phases).
 * Each transform = parallel bit-reversal copy + log2(N) butterfly stages,
 * separated by barriers. ROUNDS forward+inverse round trips are run, the
 * round-trip error is reduced with a mutex-protected max, and a final
 * forward transform's spectrum is checksummed by main in index order.
 */
#define ROUNDS 6

typedef struct { double re, im; } cpx;

static int T;
static long N;
static int LOGN;
static cpx *X0, *A, *B, *W;
static uint32_t *REV;
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static double g_maxerr;

static void fft(int tid, const cpx *src, cpx *dst, int inverse)
{
    long lo, hi;
    part(N, tid, T, &lo, &hi);
    for (long i = lo; i < hi; i++)
        dst[REV[i]] = src[i];
    pthread_barrier_wait(&bar);

    long half = N / 2;
    part(half, tid, T, &lo, &hi);
    for (int s = 0; s < LOGN; s++) {
        long h = 1L << s;
        int tws = LOGN - 1 - s; /* twiddle stride = N/(2h) */
        for (long b = lo; b < hi; b++) {
            long j = b & (h - 1);
            long i0 = ((b >> s) << (s + 1)) | j;
            long i1 = i0 + h;
            cpx w = W[j << tws];
            if (inverse)
                w.im = -w.im;
            cpx u = dst[i0], v = dst[i1];
            double tr = w.re * v.re - w.im * v.im;
            double ti = w.re * v.im + w.im * v.re;
            dst[i1].re = u.re - tr;
            dst[i1].im = u.im - ti;
            dst[i0].re = u.re + tr;
            dst[i0].im = u.im + ti;
        }
        pthread_barrier_wait(&bar);
    }
    if (inverse) {
        double sc = 1.0 / (double)N;
        part(N, tid, T, &lo, &hi);
        for (long i = lo; i < hi; i++) {
            dst[i].re *= sc;
            dst[i].im *= sc;
        }
        pthread_barrier_wait(&bar);
    }
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    const cpx *src = X0;
    for (int r = 0; r < ROUNDS; r++) {
        fft(tid, src, A, 0);
        fft(tid, A, B, 1);
        src = B;
    }
    long lo, hi;
    part(N, tid, T, &lo, &hi);
    double err = 0.0;
    for (long i = lo; i < hi; i++) {
        err = fmax(err, fabs(B[i].re - X0[i].re));
        err = fmax(err, fabs(B[i].im - X0[i].im));
    }
    pthread_mutex_lock(&mtx);
    g_maxerr = fmax(g_maxerr, err);
    pthread_mutex_unlock(&mtx);
    pthread_barrier_wait(&bar);
    fft(tid, B, A, 0);
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 1L << 20;
    T = 2;
    parse_args(argc, argv, &T, &n);
    LOGN = 1;
    while ((1L << LOGN) < n)
        LOGN++;
    N = 1L << LOGN; /* round up to a power of two */

    X0 = xmalloc(N * sizeof(cpx));
    A = xmalloc(N * sizeof(cpx));
    B = xmalloc(N * sizeof(cpx));
    W = xmalloc((N / 2) * sizeof(cpx));
    REV = xmalloc(N * sizeof(uint32_t));

    uint64_t seed = 12345;
    for (long i = 0; i < N; i++) {
        X0[i].re = 2.0 * lcg_unit(&seed) - 1.0;
        X0[i].im = 2.0 * lcg_unit(&seed) - 1.0;
    }
    const double pi = 3.14159265358979323846;
    for (long k = 0; k < N / 2; k++) {
        W[k].re = cos(2.0 * pi * (double)k / (double)N);
        W[k].im = -sin(2.0 * pi * (double)k / (double)N);
    }
    for (long i = 0; i < N; i++) {
        uint32_t r = 0;
        for (int b = 0; b < LOGN; b++)
            if (i & (1L << b))
                r |= 1u << (LOGN - 1 - b);
        REV[i] = r;
    }

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    if (!(g_maxerr < 1e-9)) {
        fprintf(stderr, "fft: round-trip error too large: %g\n", g_maxerr);
        return 1;
    }
    double sum = 0.0;
    for (long k = 0; k < N; k++)
        sum += A[k].re * (double)(1 + k % 7) - A[k].im * (double)(1 + k % 5);
    printf("checksum %.9e\n", sum);
    free(th); free(X0); free(A); free(B); free(W); free(REV);
    return 0;
}
