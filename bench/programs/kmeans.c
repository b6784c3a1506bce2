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
 * kmeans: Lloyd's k-means clustering (PARSEC/Rodinia style). Points have
 * integer coordinates; each thread assigns its own points to the nearest
 * centroid and accumulates per-cluster integer coordinate sums and counts,
 * merged into global accumulators under a mutex (exact integer sums, so
 * the merge order does not matter). Barrier; thread 0 recomputes the
 * centroids and resets the accumulators; barrier. Iterates until no point
 * changes cluster or MAXIT iterations.
 */
#define D 8
#define K 16
#define MAXIT 40

static int T;
static long N;
static int32_t *PTS;
static int *ASSIGN;
static double CENT[K][D];
static int64_t g_sum[K][D];
static int64_t g_cnt[K];
static long g_changed;
static int g_done, g_iters;
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    long lo, hi;
    part(N, tid, T, &lo, &hi);
    for (;;) {
        int64_t sum[K][D], cnt[K];
        long changed = 0;
        memset(sum, 0, sizeof(sum));
        memset(cnt, 0, sizeof(cnt));
        for (long i = lo; i < hi; i++) {
            const int32_t *p = &PTS[i * D];
            int best = 0;
            double bd = INFINITY;
            for (int c = 0; c < K; c++) {
                double d2 = 0.0;
                for (int d = 0; d < D; d++) {
                    double t = (double)p[d] - CENT[c][d];
                    d2 += t * t;
                }
                if (d2 < bd) {
                    bd = d2;
                    best = c;
                }
            }
            if (ASSIGN[i] != best) {
                ASSIGN[i] = best;
                changed++;
            }
            cnt[best]++;
            for (int d = 0; d < D; d++)
                sum[best][d] += p[d];
        }
        pthread_mutex_lock(&mtx);
        for (int c = 0; c < K; c++) {
            g_cnt[c] += cnt[c];
            for (int d = 0; d < D; d++)
                g_sum[c][d] += sum[c][d];
        }
        g_changed += changed;
        pthread_mutex_unlock(&mtx);
        pthread_barrier_wait(&bar);
        if (tid == 0) {
            for (int c = 0; c < K; c++) {
                if (g_cnt[c] > 0)
                    for (int d = 0; d < D; d++)
                        CENT[c][d] = (double)g_sum[c][d] / (double)g_cnt[c];
                g_cnt[c] = 0;
                for (int d = 0; d < D; d++)
                    g_sum[c][d] = 0;
            }
            g_iters++;
            g_done = g_changed == 0 || g_iters >= MAXIT;
            g_changed = 0;
        }
        pthread_barrier_wait(&bar);
        if (g_done)
            break;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 300000;
    T = 2;
    parse_args(argc, argv, &T, &n);
    N = n;
    PTS = xmalloc((size_t)N * D * sizeof(int32_t));
    ASSIGN = xmalloc(N * sizeof(int));

    /* Clustered data: 24 Gaussian-ish blobs (sum of uniforms). */
    enum { NBLOB = 24 };
    int32_t blob[NBLOB][D];
    uint64_t seed = 8675309;
    for (int b = 0; b < NBLOB; b++)
        for (int d = 0; d < D; d++)
            blob[b][d] = (int32_t)(lcg_next(&seed) >> 15); /* [0,65536) */
    for (long i = 0; i < N; i++) {
        int b = (int)(lcg_next(&seed) % NBLOB);
        for (int d = 0; d < D; d++) {
            int32_t noise = (int32_t)((lcg_next(&seed) >> 20) + (lcg_next(&seed) >> 20)) - 2048;
            PTS[i * D + d] = blob[b][d] + 4 * noise;
        }
        ASSIGN[i] = -1;
    }
    for (int c = 0; c < K; c++) /* initial centroids: evenly spaced points */
        for (int d = 0; d < D; d++)
            CENT[c][d] = (double)PTS[(c * (N / K)) * D + d];

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    double sum = 0.0;
    for (int c = 0; c < K; c++)
        for (int d = 0; d < D; d++)
            sum += CENT[c][d] * (double)(c + 1);
    uint64_t ah = 0;
    for (long i = 0; i < N; i++)
        ah = ah * 31 + (uint64_t)ASSIGN[i];
    printf("checksum %.9e\n", sum + (double)g_iters + (double)(ah % 1000003));
    free(th); free(PTS); free(ASSIGN);
    return 0;
}
