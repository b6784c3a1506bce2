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
 * lu: blocked dense LU factorization without pivoting (SPLASH-2 LU style).
 * The matrix is divided into BSxBS blocks owned by threads in a 2-D
 * scatter decomposition. For each diagonal step K: the owner factors the
 * diagonal block; barrier; owners update perimeter blocks (triangular
 * solves); barrier; owners update interior blocks; barrier.
 * A diagonally dominant input makes pivoting unnecessary. Every element
 * sees the same sequence of operations regardless of the thread count.
 */
#define BS 32

static int T, PR, PC;
static long N, NB;
static double *M;
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static double g_minpiv = INFINITY;

#define EL(i, j) M[(long)(i) * N + (j)]

static inline int owner(long I, long J)
{
    return (int)((I % PR) * PC + (J % PC));
}

static inline double *blk(long I, long J)
{
    return &M[I * BS * N + J * BS];
}

static double factor_diag(double *a)
{
    double minpiv = INFINITY;
    for (int k = 0; k < BS; k++) {
        double piv = a[k * N + k];
        minpiv = fmin(minpiv, fabs(piv));
        for (int i = k + 1; i < BS; i++) {
            double l = a[i * N + k] / piv;
            a[i * N + k] = l;
            for (int j = k + 1; j < BS; j++)
                a[i * N + j] -= l * a[k * N + j];
        }
    }
    return minpiv;
}

/* X := L^{-1} X, L unit lower triangular taken from diagonal block d. */
static void solve_row_blk(const double *d, double *x)
{
    for (int k = 0; k < BS; k++)
        for (int i = k + 1; i < BS; i++) {
            double l = d[i * N + k];
            for (int j = 0; j < BS; j++)
                x[i * N + j] -= l * x[k * N + j];
        }
}

/* X := X U^{-1}, U upper triangular taken from diagonal block d. */
static void solve_col_blk(const double *d, double *x)
{
    for (int i = 0; i < BS; i++) {
        double *xr = &x[i * N];
        for (int k = 0; k < BS; k++) {
            double v = xr[k] / d[k * N + k];
            xr[k] = v;
            for (int j = k + 1; j < BS; j++)
                xr[j] -= v * d[k * N + j];
        }
    }
}

/* C -= A * B */
static void gemm_blk(double *c, const double *a, const double *b)
{
    for (int i = 0; i < BS; i++)
        for (int k = 0; k < BS; k++) {
            double l = a[i * N + k];
            const double *br = &b[k * N];
            double *cr = &c[i * N];
            for (int j = 0; j < BS; j++)
                cr[j] -= l * br[j];
        }
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    double minpiv = INFINITY;
    for (long K = 0; K < NB; K++) {
        if (owner(K, K) == tid)
            minpiv = fmin(minpiv, factor_diag(blk(K, K)));
        pthread_barrier_wait(&bar);
        for (long J = K + 1; J < NB; J++)
            if (owner(K, J) == tid)
                solve_row_blk(blk(K, K), blk(K, J));
        for (long I = K + 1; I < NB; I++)
            if (owner(I, K) == tid)
                solve_col_blk(blk(K, K), blk(I, K));
        pthread_barrier_wait(&bar);
        for (long I = K + 1; I < NB; I++)
            for (long J = K + 1; J < NB; J++)
                if (owner(I, J) == tid)
                    gemm_blk(blk(I, J), blk(I, K), blk(K, J));
        pthread_barrier_wait(&bar);
    }
    pthread_mutex_lock(&mtx);
    g_minpiv = fmin(g_minpiv, minpiv);
    pthread_mutex_unlock(&mtx);
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 1536;
    T = 2;
    parse_args(argc, argv, &T, &n);
    N = (n + BS - 1) / BS * BS;
    NB = N / BS;
    PR = 1;
    for (int p = 1; p * p <= T; p++)
        if (T % p == 0)
            PR = p;
    PC = T / PR;

    M = xmalloc((size_t)N * N * sizeof(double));
    uint64_t seed = 4242;
    for (long i = 0; i < N; i++)
        for (long j = 0; j < N; j++)
            EL(i, j) = lcg_unit(&seed) - 0.5 + (i == j ? (double)N : 0.0);

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    if (!(g_minpiv > 0.0)) {
        fprintf(stderr, "lu: zero pivot\n");
        return 1;
    }
    double sum = 0.0;
    for (long i = 0; i < N; i++)
        for (long j = 0; j < N; j++)
            sum += EL(i, j) * (double)(1 + (i + 2 * j) % 11);
    printf("checksum %.9e\n", sum + g_minpiv);
    free(th);
    free(M);
    return 0;
}
