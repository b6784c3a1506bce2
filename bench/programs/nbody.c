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
 * nbody: direct O(N^2) gravitational n-body with Plummer softening and a
 * kick-drift-kick leapfrog integrator. Bodies are partitioned by thread
 * index; each thread computes accelerations of its own bodies by summing
 * over all bodies in index order. The adaptive time step uses the global
 * max acceleration, reduced with a mutex (exact, order independent).
 * Final per-body energies are summed by main in index order.
 */
#define STEPS 10
#define EPS2 1e-4
#define DT0 1e-3
#define ETA 0.02

static int T;
static long N;
static double *PX, *PY, *PZ, *VX, *VY, *VZ, *AX, *AY, *AZ, *MS, *EN;
static pthread_barrier_t bar;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static double g_amax, g_time;

static double accel(long lo, long hi)
{
    double amax = 0.0;
    for (long i = lo; i < hi; i++) {
        double xi = PX[i], yi = PY[i], zi = PZ[i];
        double ax = 0.0, ay = 0.0, az = 0.0;
        for (long j = 0; j < N; j++) {
            double dx = PX[j] - xi, dy = PY[j] - yi, dz = PZ[j] - zi;
            double r2 = dx * dx + dy * dy + dz * dz + EPS2;
            double inv = 1.0 / sqrt(r2);
            double s = MS[j] * inv * inv * inv;
            ax += s * dx;
            ay += s * dy;
            az += s * dz;
        }
        AX[i] = ax;
        AY[i] = ay;
        AZ[i] = az;
        amax = fmax(amax, sqrt(ax * ax + ay * ay + az * az));
    }
    return amax;
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    long lo, hi;
    part(N, tid, T, &lo, &hi);
    double tsim = 0.0;

    double am = accel(lo, hi);
    pthread_mutex_lock(&mtx);
    g_amax = fmax(g_amax, am);
    pthread_mutex_unlock(&mtx);
    pthread_barrier_wait(&bar);

    for (int s = 0; s < STEPS; s++) {
        double dt = fmin(DT0, ETA * sqrt(sqrt(EPS2) / g_amax));
        tsim += dt;
        pthread_barrier_wait(&bar); /* everyone has read g_amax */
        if (tid == 0)
            g_amax = 0.0;
        for (long i = lo; i < hi; i++) {
            VX[i] += 0.5 * dt * AX[i];
            VY[i] += 0.5 * dt * AY[i];
            VZ[i] += 0.5 * dt * AZ[i];
            PX[i] += dt * VX[i];
            PY[i] += dt * VY[i];
            PZ[i] += dt * VZ[i];
        }
        pthread_barrier_wait(&bar); /* positions complete */
        am = accel(lo, hi);
        for (long i = lo; i < hi; i++) {
            VX[i] += 0.5 * dt * AX[i];
            VY[i] += 0.5 * dt * AY[i];
            VZ[i] += 0.5 * dt * AZ[i];
        }
        pthread_mutex_lock(&mtx);
        g_amax = fmax(g_amax, am);
        pthread_mutex_unlock(&mtx);
        pthread_barrier_wait(&bar); /* accelerations/velocities complete */
    }

    /* Energy: kinetic + half of the pair potential, per body. */
    for (long i = lo; i < hi; i++) {
        double pe = 0.0;
        for (long j = 0; j < N; j++) {
            if (j == i)
                continue;
            double dx = PX[j] - PX[i], dy = PY[j] - PY[i], dz = PZ[j] - PZ[i];
            pe -= MS[j] / sqrt(dx * dx + dy * dy + dz * dz + EPS2);
        }
        EN[i] = 0.5 * MS[i] * (VX[i] * VX[i] + VY[i] * VY[i] + VZ[i] * VZ[i]) +
                0.5 * MS[i] * pe;
    }
    if (tid == 0)
        g_time = tsim;
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 4096;
    T = 2;
    parse_args(argc, argv, &T, &n);
    N = n;
    double **arrs[] = {&PX, &PY, &PZ, &VX, &VY, &VZ, &AX, &AY, &AZ, &MS, &EN};
    for (unsigned k = 0; k < sizeof(arrs) / sizeof(arrs[0]); k++)
        *arrs[k] = xmalloc(N * sizeof(double));

    uint64_t seed = 99;
    for (long i = 0; i < N; i++) {
        double x, y, z;
        do { /* uniform in the unit ball */
            x = 2.0 * lcg_unit(&seed) - 1.0;
            y = 2.0 * lcg_unit(&seed) - 1.0;
            z = 2.0 * lcg_unit(&seed) - 1.0;
        } while (x * x + y * y + z * z > 1.0);
        PX[i] = x;
        PY[i] = y;
        PZ[i] = z;
        VX[i] = -0.3 * y + 0.05 * (lcg_unit(&seed) - 0.5); /* slow rotation */
        VY[i] = 0.3 * x + 0.05 * (lcg_unit(&seed) - 0.5);
        VZ[i] = 0.05 * (lcg_unit(&seed) - 0.5);
        MS[i] = (0.5 + lcg_unit(&seed)) / (double)N;
    }

    pthread_barrier_init(&bar, NULL, (unsigned)T);
    pthread_t *th = xmalloc(T * sizeof(pthread_t));
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);

    double e = 0.0, c = 0.0;
    for (long i = 0; i < N; i++) {
        e += EN[i];
        c += PX[i] + 2.0 * PY[i] + 3.0 * PZ[i];
    }
    printf("checksum %.9e\n", e + 1e-3 * c + g_time);
    free(th);
    for (unsigned k = 0; k < sizeof(arrs) / sizeof(arrs[0]); k++)
        free(*arrs[k]);
    return 0;
}
