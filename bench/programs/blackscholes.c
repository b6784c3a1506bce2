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
 * blackscholes: European option pricing with the Black-Scholes closed form
 * and the polynomial CNDF approximation used by PARSEC blackscholes.
 * Options are partitioned by thread index; the portfolio is repriced
 * NUM_RUNS times with a barrier between runs. The number of in-the-money
 * options is a mutex-protected integer reduction; prices are summed by
 * main in index order.
 */
#define NUM_RUNS 30

static int T;
static long N;
static double *SPOT, *STRIKE, *RATE, *VOL, *TIME, *PRICE;
static int *OTYPE; /* 0 = call, 1 = put */
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static long g_itm;

static double cndf(double x)
{
    const double inv_sqrt_2pi = 0.39894228040143270286;
    int neg = x < 0.0;
    if (neg)
        x = -x;
    double expv = exp(-0.5 * x * x);
    double nprime = expv * inv_sqrt_2pi;
    double k = 1.0 / (1.0 + 0.2316419 * x);
    double k2 = k * k, k3 = k2 * k, k4 = k3 * k, k5 = k4 * k;
    double poly = 0.319381530 * k - 0.356563782 * k2 + 1.781477937 * k3 -
                  1.821255978 * k4 + 1.330274429 * k5;
    double out = 1.0 - poly * nprime;
    return neg ? 1.0 - out : out;
}

static double bs_price(double s, double k, double r, double v, double t, int put)
{
    double sqt = sqrt(t);
    double d1 = (log(s / k) + (r + 0.5 * v * v) * t) / (v * sqt);
    double d2 = d1 - v * sqt;
    double fut = k * exp(-r * t);
    if (!put)
        return s * cndf(d1) - fut * cndf(d2);
    return fut * (1.0 - cndf(d2)) - s * (1.0 - cndf(d1));
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    long lo, hi;
    part(N, tid, T, &lo, &hi);
    for (int run = 0; run < NUM_RUNS; run++) {
        for (long i = lo; i < hi; i++)
            PRICE[i] = bs_price(SPOT[i], STRIKE[i], RATE[i], VOL[i], TIME[i], OTYPE[i]);
        pthread_barrier_wait(&bar);
    }
    long itm = 0;
    for (long i = lo; i < hi; i++)
        itm += OTYPE[i] ? STRIKE[i] > SPOT[i] : SPOT[i] > STRIKE[i];
    pthread_mutex_lock(&mtx);
    g_itm += itm;
    pthread_mutex_unlock(&mtx);
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 1L << 19;
    T = 2;
    parse_args(argc, argv, &T, &n);
    N = n;
    double **arrs[] = {&SPOT, &STRIKE, &RATE, &VOL, &TIME, &PRICE};
    for (unsigned k = 0; k < sizeof(arrs) / sizeof(arrs[0]); k++)
        *arrs[k] = xmalloc(N * sizeof(double));
    OTYPE = xmalloc(N * sizeof(int));
    uint64_t seed = 1729;
    for (long i = 0; i < N; i++) {
        SPOT[i] = 10.0 + 90.0 * lcg_unit(&seed);
        STRIKE[i] = SPOT[i] * (0.8 + 0.4 * lcg_unit(&seed));
        RATE[i] = 0.01 + 0.09 * lcg_unit(&seed);
        VOL[i] = 0.05 + 0.6 * lcg_unit(&seed);
        TIME[i] = 0.1 + 1.9 * lcg_unit(&seed);
        OTYPE[i] = (int)(lcg_next(&seed) >> 30) & 1;
    }

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    double sum = 0.0;
    for (long i = 0; i < N; i++)
        sum += PRICE[i];
    printf("checksum %.9e\n", sum + (double)g_itm);
    free(th);
    for (unsigned k = 0; k < sizeof(arrs) / sizeof(arrs[0]); k++)
        free(*arrs[k]);
    free(OTYPE);
    return 0;
}
