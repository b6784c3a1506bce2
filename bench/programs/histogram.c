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
 * histogram: RGB image histogram and iterative histogram equalization
 * (Phoenix-style histogram kernel extended with a remap phase). The image
 * is generated in parallel from per-block fixed-seed LCG streams (block
 * seeds depend only on the block index). Each round: threads build local
 * 3x256 histograms over their pixel range and merge them into the global
 * histogram under a mutex; barrier; thread 0 builds equalization lookup
 * tables and resets the histogram; barrier; threads remap their pixels.
 * All reductions are integer, so results are exact and order independent.
 */
#define ROUNDS 6
#define GENBLK 65536L

static int T;
static long N, NBLK;
static uint8_t *IMG;
static uint64_t *BLKHASH;
static uint64_t g_hist[3][256];
static uint8_t g_lut[3][256];
static uint64_t g_sig; /* written by thread 0 only */
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;

static void count_and_merge(long plo, long phi)
{
    uint64_t h[3][256];
    memset(h, 0, sizeof(h));
    const uint8_t *p = &IMG[plo * 3];
    for (long i = plo; i < phi; i++, p += 3) {
        h[0][p[0]]++;
        h[1][p[1]]++;
        h[2][p[2]]++;
    }
    pthread_mutex_lock(&mtx);
    for (int c = 0; c < 3; c++)
        for (int v = 0; v < 256; v++)
            g_hist[c][v] += h[c][v];
    pthread_mutex_unlock(&mtx);
}

/* Thread 0 only, between barriers: fold histogram into signature,
 * build equalization LUTs (with a round-dependent gamma), reset. */
static void build_luts(int round)
{
    double gamma = 0.8 + 0.15 * round;
    for (int c = 0; c < 3; c++) {
        uint64_t cdf = 0;
        for (int v = 0; v < 256; v++) {
            g_sig = g_sig * 1000003ULL + g_hist[c][v] * (uint64_t)(v + 1 + 256 * c);
            cdf += g_hist[c][v];
            double f = (double)cdf / (double)N;
            int o = (int)(255.0 * pow(f, gamma) + 0.5);
            g_lut[c][v] = (uint8_t)(o > 255 ? 255 : o);
            g_hist[c][v] = 0;
        }
    }
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    long blo, bhi;
    part(NBLK, tid, T, &blo, &bhi);
    long plo = blo * GENBLK, phi = bhi * GENBLK < N ? bhi * GENBLK : N;

    for (long b = blo; b < bhi; b++) {
        uint64_t s = 0x9E3779B97F4A7C15ULL * (uint64_t)(b + 1);
        long e = (b + 1) * GENBLK < N ? (b + 1) * GENBLK : N;
        for (long i = b * GENBLK; i < e; i++) {
            uint32_t r1 = lcg_next(&s), r2 = lcg_next(&s);
            uint8_t *p = &IMG[i * 3];
            p[0] = (uint8_t)(((r1 & 255) + ((r1 >> 8) & 255)) >> 1); /* triangular */
            p[1] = (uint8_t)((((r1 >> 16) & 255) * ((r1 >> 23) & 255)) >> 8); /* skewed dark */
            p[2] = (uint8_t)(64 + ((r2 >> 7) & 127));                      /* narrow band */
        }
    }

    for (int r = 0; r < ROUNDS; r++) {
        count_and_merge(plo, phi);
        pthread_barrier_wait(&bar);
        if (tid == 0)
            build_luts(r);
        pthread_barrier_wait(&bar);
        uint8_t *p = &IMG[plo * 3];
        for (long i = plo; i < phi; i++, p += 3) {
            p[0] = g_lut[0][p[0]];
            p[1] = g_lut[1][p[1]];
            p[2] = g_lut[2][p[2]];
        }
    }
    count_and_merge(plo, phi);

    for (long b = blo; b < bhi; b++) { /* FNV-1a per generation block */
        uint64_t h = 1469598103934665603ULL;
        long e = (b + 1) * GENBLK < N ? (b + 1) * GENBLK : N;
        for (long i = b * GENBLK * 3; i < e * 3; i++)
            h = (h ^ IMG[i]) * 1099511628211ULL;
        BLKHASH[b] = h;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 32L << 20;
    T = 2;
    parse_args(argc, argv, &T, &n);
    N = n;
    NBLK = (N + GENBLK - 1) / GENBLK;
    IMG = xmalloc((size_t)N * 3);
    BLKHASH = xmalloc(NBLK * sizeof(uint64_t));

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    uint64_t sum = g_sig;
    for (int c = 0; c < 3; c++)
        for (int v = 0; v < 256; v++)
            sum = sum * 31ULL + g_hist[c][v] * (uint64_t)(v + 1);
    for (long b = 0; b < NBLK; b++)
        sum = sum * 0x100000001B3ULL + BLKHASH[b];
    printf("checksum %llu\n", (unsigned long long)sum);
    free(th); free(IMG); free(BLKHASH);
    return 0;
}
