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
 * ocean: red-black successive over-relaxation for a Poisson equation
 * (laplacian(psi) = forcing) on an (N+2)x(N+2) grid with fixed zero
 * boundaries, the core elliptic solve of SPLASH-2 OCEAN. Rows are
 * partitioned by thread index; red and black half-sweeps are separated
 * by barriers; the per-iteration max update is reduced with a mutex
 * (max is exact, so the convergence decision is thread-count independent).
 */
#define MAXITER 250
#define OMEGA 1.9
#define TOL 1e-7

static int T;
static long N, W; /* interior size, row width N+2 */
static double *U, *F, *ROWSUM;
static double H2;
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static double g_diff;
static int g_iters;

static double sweep(long r0, long r1, int color)
{
    double md = 0.0;
    for (long i = r0; i < r1; i++) {
        long j0 = 1 + ((i + 1 + color) & 1); /* (i+j)%2 == color */
        double *u = &U[i * W];
        const double *up = &U[(i - 1) * W], *dn = &U[(i + 1) * W];
        const double *f = &F[i * W];
        for (long j = j0; j <= N; j += 2) {
            double gs = 0.25 * (up[j] + dn[j] + u[j - 1] + u[j + 1] - H2 * f[j]);
            double nv = u[j] + OMEGA * (gs - u[j]);
            md = fmax(md, fabs(nv - u[j]));
            u[j] = nv;
        }
    }
    return md;
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    long lo, hi;
    part(N, tid, T, &lo, &hi);
    lo += 1;
    hi += 1; /* interior rows 1..N */
    int it;
    for (it = 0; it < MAXITER; it++) {
        double md = sweep(lo, hi, 0);
        pthread_barrier_wait(&bar);
        md = fmax(md, sweep(lo, hi, 1));
        pthread_mutex_lock(&mtx);
        g_diff = fmax(g_diff, md);
        pthread_mutex_unlock(&mtx);
        pthread_barrier_wait(&bar);
        int done = g_diff < TOL;
        pthread_barrier_wait(&bar);
        if (tid == 0)
            g_diff = 0.0; /* next accumulation happens after a barrier */
        if (done) {
            it++;
            break;
        }
    }
    if (tid == 0)
        g_iters = it;
    for (long i = lo; i < hi; i++) {
        double s = 0.0;
        for (long j = 1; j <= N; j++)
            s += U[i * W + j];
        ROWSUM[i] = s;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 1024;
    T = 2;
    parse_args(argc, argv, &T, &n);
    N = n;
    W = N + 2;
    U = xmalloc((size_t)W * W * sizeof(double));
    F = xmalloc((size_t)W * W * sizeof(double));
    ROWSUM = xmalloc((size_t)W * sizeof(double));
    memset(U, 0, (size_t)W * W * sizeof(double));
    memset(F, 0, (size_t)W * W * sizeof(double));
    H2 = 1.0 / (double)((N + 1) * (N + 1));

    /* Wind-stress-like forcing: smooth gyre pattern plus LCG noise. */
    const double pi = 3.14159265358979323846;
    uint64_t seed = 2024;
    for (long i = 1; i <= N; i++)
        for (long j = 1; j <= N; j++)
            F[i * W + j] = sin(pi * (double)i / (double)(N + 1)) *
                               cos(2.0 * pi * (double)j / (double)(N + 1)) +
                           0.1 * (lcg_unit(&seed) - 0.5);

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    double sum = 0.0;
    for (long i = 1; i <= N; i++)
        sum += ROWSUM[i];
    printf("checksum %.9e\n", sum * 1e3 + (double)g_iters);
    free(th); free(U); free(F); free(ROWSUM);
    return 0;
}
