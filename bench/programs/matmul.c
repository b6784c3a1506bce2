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
 * matmul: blocked dense matrix multiply C = A * B. Output blocks are
 * handed out from a mutex-protected task counter (dynamic scheduling, as
 * in SPLASH/PARSEC task queues); each block is computed with a fixed
 * k-order, so the result does not depend on which thread computes it.
 * After a barrier, threads compute row sums of their row range; main
 * sums them in index order.
 */
#define BS 64

static int T;
static long N, NB;
static double *MA, *MB, *MC, *ROWSUM;
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static long g_next;

static long next_task(void)
{
    pthread_mutex_lock(&mtx);
    long t = g_next++;
    pthread_mutex_unlock(&mtx);
    return t;
}

static void do_block(long bi, long bj)
{
    long i0 = bi * BS, i1 = i0 + BS < N ? i0 + BS : N;
    long j0 = bj * BS, j1 = j0 + BS < N ? j0 + BS : N;
    for (long i = i0; i < i1; i++)
        for (long j = j0; j < j1; j++)
            MC[i * N + j] = 0.0;
    for (long k0 = 0; k0 < N; k0 += BS) {
        long k1 = k0 + BS < N ? k0 + BS : N;
        for (long i = i0; i < i1; i++) {
            double *c = &MC[i * N];
            for (long k = k0; k < k1; k++) {
                double a = MA[i * N + k];
                const double *b = &MB[k * N];
                for (long j = j0; j < j1; j++)
                    c[j] += a * b[j];
            }
        }
    }
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    long ntasks = NB * NB;
    for (long t; (t = next_task()) < ntasks;)
        do_block(t / NB, t % NB);
    pthread_barrier_wait(&bar);
    long lo, hi;
    part(N, tid, T, &lo, &hi);
    for (long i = lo; i < hi; i++) {
        double s = 0.0;
        for (long j = 0; j < N; j++)
            s += MC[i * N + j] * (double)(1 + j % 3);
        ROWSUM[i] = s;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 1152;
    T = 2;
    parse_args(argc, argv, &T, &n);
    N = n;
    NB = (N + BS - 1) / BS;
    MA = xmalloc((size_t)N * N * sizeof(double));
    MB = xmalloc((size_t)N * N * sizeof(double));
    MC = xmalloc((size_t)N * N * sizeof(double));
    ROWSUM = xmalloc(N * sizeof(double));
    uint64_t seed = 5150;
    for (long i = 0; i < N * N; i++)
        MA[i] = lcg_unit(&seed) - 0.5;
    for (long i = 0; i < N * N; i++)
        MB[i] = lcg_unit(&seed) - 0.5;

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    double sum = 0.0;
    for (long i = 0; i < N; i++)
        sum += ROWSUM[i] * (double)(1 + i % 5);
    printf("checksum %.9e\n", sum);
    free(th); free(MA); free(MB); free(MC); free(ROWSUM);
    return 0;
}
