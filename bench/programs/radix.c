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
 * radix: parallel LSD radix sort of 32-bit keys (SPLASH-2 RADIX style).
 * Per RBITS-bit digit pass: each thread histograms its contiguous chunk;
 * barrier; each thread derives its scatter offsets from all threads'
 * histograms (global prefix by digit, then by thread index); stable
 * scatter into the other buffer; barrier. Verification (sortedness and a
 * position-weighted key hash) is reduced with a mutex over integers.
 */
#define RBITS 4
#define RADIX (1 << RBITS)
#define PASSES ((32 + RBITS - 1) / RBITS)

static int T;
static long N;
static uint32_t *KA, *KB;
static long (*HIST)[RADIX];
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_hash, g_unsorted, g_keysum;

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    long lo, hi;
    part(N, tid, T, &lo, &hi);
    uint32_t *src = KA, *dst = KB;
    long off[RADIX];

    for (int p = 0; p < PASSES; p++) {
        int shift = p * RBITS;
        long *h = HIST[tid];
        for (int d = 0; d < RADIX; d++)
            h[d] = 0;
        for (long i = lo; i < hi; i++)
            h[(src[i] >> shift) & (RADIX - 1)]++;
        pthread_barrier_wait(&bar);

        long base = 0;
        for (int d = 0; d < RADIX; d++) {
            long before = 0, total = 0;
            for (int t = 0; t < T; t++) {
                if (t < tid)
                    before += HIST[t][d];
                total += HIST[t][d];
            }
            off[d] = base + before;
            base += total;
        }
        for (long i = lo; i < hi; i++) {
            uint32_t k = src[i];
            dst[off[(k >> shift) & (RADIX - 1)]++] = k;
        }
        pthread_barrier_wait(&bar);
        uint32_t *tmp = src;
        src = dst;
        dst = tmp;
    }

    /* src now holds the sorted keys. */
    uint64_t hash = 0, unsorted = 0, keysum = 0;
    for (long i = lo; i < hi; i++) {
        hash += (uint64_t)src[i] * (uint64_t)(i + 1);
        keysum += src[i];
        if (i + 1 < N && src[i] > src[i + 1])
            unsorted++;
    }
    pthread_mutex_lock(&mtx);
    g_hash += hash;
    g_unsorted += unsorted;
    g_keysum += keysum;
    pthread_mutex_unlock(&mtx);
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 16L << 20;
    T = 2;
    parse_args(argc, argv, &T, &n);
    N = n;
    KA = xmalloc(N * sizeof(uint32_t));
    KB = xmalloc(N * sizeof(uint32_t));
    HIST = xmalloc((size_t)T * sizeof(*HIST));

    uint64_t seed = 777, insum = 0;
    for (long i = 0; i < N; i++) {
        uint32_t hi16 = lcg_next(&seed) >> 15, lo16 = lcg_next(&seed) >> 15;
        KA[i] = (hi16 << 16) | lo16;
        insum += KA[i];
    }

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    if (g_unsorted != 0 || g_keysum != insum) {
        fprintf(stderr, "radix: output not a sorted permutation\n");
        return 1;
    }
    printf("checksum %llu\n", (unsigned long long)g_hash);
    free(th); free(KA); free(KB); free(HIST);
    return 0;
}
