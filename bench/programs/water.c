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
 * water: flexible 3-site water molecular dynamics (in the spirit of
 * SPLASH-2 WATER-NSQUARED). N molecules (O,H,H) in a periodic cubic box;
 * intramolecular harmonic bonds; intermolecular O-O Lennard-Jones plus
 * site-site Coulomb for molecule pairs whose O-O minimum-image distance is
 * within the cutoff. Velocity-Verlet steps separated by barriers; each
 * thread computes the full force on its own molecules (no Newton-3 sharing,
 * so no locks on forces and a fixed summation order). The interacting-pair
 * count is a mutex-protected integer reduction; per-molecule energies are
 * summed by main in index order. Units: kcal/mol, Angstrom, amu.
 */
#define STEPS 6
#define DT 0.01
#define RCUT 9.0
#define SPACING 3.1
#define KCOUL 332.0637
#define QO (-0.82)
#define QH 0.41
#define LJ_EPS 0.1554
#define LJ_SIG 3.166
#define KB 1059.0
#define ROH 1.0
#define KHH 228.0
#define RHH 1.633

static const double MASS[3] = {15.9994, 1.008, 1.008};
static const double CHG[3] = {QO, QH, QH};

static int T;
static long N;
static double L;
static double (*X)[3][3], (*V)[3][3], (*FR)[3][3], *EN;
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long g_pairs;

static double spring(long m, int a, int b, double k, double r0)
{
    double d[3], r2 = 0.0;
    for (int c = 0; c < 3; c++) {
        d[c] = X[m][b][c] - X[m][a][c];
        r2 += d[c] * d[c];
    }
    double r = sqrt(r2);
    double f = -k * (r - r0) / r; /* force on b along d */
    for (int c = 0; c < 3; c++) {
        FR[m][b][c] += f * d[c];
        FR[m][a][c] -= f * d[c];
    }
    return 0.5 * k * (r - r0) * (r - r0);
}

/* Forces on own molecules; returns interacting pair count; fills EN (PE). */
static unsigned long long forces(long lo, long hi)
{
    unsigned long long pairs = 0;
    const double rc2 = RCUT * RCUT;
    const double s6 = pow(LJ_SIG, 6.0);
    for (long i = lo; i < hi; i++) {
        memset(FR[i], 0, sizeof(FR[i]));
        double pe = 0.0;
        pe += spring(i, 0, 1, KB, ROH);
        pe += spring(i, 0, 2, KB, ROH);
        pe += spring(i, 1, 2, KHH, RHH);
        for (long j = 0; j < N; j++) {
            if (j == i)
                continue;
            double sh[3], d[3], r2 = 0.0;
            for (int c = 0; c < 3; c++) {
                double dd = X[j][0][c] - X[i][0][c];
                sh[c] = -L * nearbyint(dd / L);
                d[c] = dd + sh[c];
                r2 += d[c] * d[c];
            }
            if (r2 >= rc2)
                continue;
            pairs++;
            /* O-O Lennard-Jones */
            double ir2 = 1.0 / r2, ir6 = ir2 * ir2 * ir2;
            double lj = 4.0 * LJ_EPS * s6 * ir6;
            pe += 0.5 * (lj * s6 * ir6 - lj);
            double flj = (12.0 * lj * s6 * ir6 - 6.0 * lj) * ir2; /* F = -flj*d on i */
            for (int c = 0; c < 3; c++)
                FR[i][0][c] -= flj * d[c];
            /* site-site Coulomb */
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    double e[3], s2 = 0.0;
                    for (int c = 0; c < 3; c++) {
                        e[c] = X[j][b][c] + sh[c] - X[i][a][c];
                        s2 += e[c] * e[c];
                    }
                    double ir = 1.0 / sqrt(s2);
                    double u = KCOUL * CHG[a] * CHG[b] * ir;
                    pe += 0.5 * u;
                    double fc = u * ir * ir;
                    for (int c = 0; c < 3; c++)
                        FR[i][a][c] -= fc * e[c];
                }
        }
        EN[i] = pe;
    }
    return pairs;
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    long lo, hi;
    part(N, tid, T, &lo, &hi);
    unsigned long long pairs = forces(lo, hi);
    pthread_barrier_wait(&bar);
    for (int s = 0; s < STEPS; s++) {
        for (long i = lo; i < hi; i++) {
            for (int a = 0; a < 3; a++)
                for (int c = 0; c < 3; c++) {
                    V[i][a][c] += 0.5 * DT * FR[i][a][c] / MASS[a];
                    X[i][a][c] += DT * V[i][a][c];
                }
            for (int c = 0; c < 3; c++) { /* wrap molecule by its oxygen */
                double w = -L * floor(X[i][0][c] / L);
                for (int a = 0; a < 3; a++)
                    X[i][a][c] += w;
            }
        }
        pthread_barrier_wait(&bar); /* positions complete */
        pairs += forces(lo, hi);
        for (long i = lo; i < hi; i++)
            for (int a = 0; a < 3; a++)
                for (int c = 0; c < 3; c++)
                    V[i][a][c] += 0.5 * DT * FR[i][a][c] / MASS[a];
        pthread_barrier_wait(&bar); /* forces done before next drift */
    }
    for (long i = lo; i < hi; i++)
        for (int a = 0; a < 3; a++)
            for (int c = 0; c < 3; c++)
                EN[i] += 0.5 * MASS[a] * V[i][a][c] * V[i][a][c];
    pthread_mutex_lock(&mtx);
    g_pairs += pairs;
    pthread_mutex_unlock(&mtx);
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 3072;
    T = 2;
    parse_args(argc, argv, &T, &n);
    N = n;
    long m = 1;
    while (m * m * m < N)
        m++;
    L = (double)m * SPACING;
    X = xmalloc(N * sizeof(*X));
    V = xmalloc(N * sizeof(*V));
    FR = xmalloc(N * sizeof(*FR));
    EN = xmalloc(N * sizeof(double));

    uint64_t seed = 31337;
    const double half = 0.5 * 104.52 * 3.14159265358979323846 / 180.0;
    for (long k = 0; k < N; k++) {
        double o[3] = {(double)(k % m), (double)((k / m) % m), (double)(k / (m * m))};
        double a[3], b[3], na = 0.0, nb = 0.0, dot = 0.0;
        for (int c = 0; c < 3; c++) {
            o[c] = (o[c] + 0.5) * SPACING + 0.2 * (lcg_unit(&seed) - 0.5);
            a[c] = lcg_unit(&seed) - 0.5;
            b[c] = lcg_unit(&seed) - 0.5;
            na += a[c] * a[c];
        }
        na = sqrt(na);
        for (int c = 0; c < 3; c++) {
            a[c] /= na;
            dot += a[c] * b[c];
        }
        for (int c = 0; c < 3; c++) {
            b[c] -= dot * a[c];
            nb += b[c] * b[c];
        }
        nb = sqrt(nb);
        for (int c = 0; c < 3; c++) {
            b[c] /= nb;
            X[k][0][c] = o[c];
            X[k][1][c] = o[c] + ROH * (cos(half) * a[c] + sin(half) * b[c]);
            X[k][2][c] = o[c] + ROH * (cos(half) * a[c] - sin(half) * b[c]);
            for (int s = 0; s < 3; s++)
                V[k][s][c] = 0.2 * (lcg_unit(&seed) - 0.5);
        }
    }

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    double e = 0.0;
    for (long i = 0; i < N; i++)
        e += EN[i];
    printf("checksum %.9e\n", e + (double)g_pairs);
    free(th); free(X); free(V); free(FR); free(EN);
    return 0;
}
