/* stencil.c - barrier-phased 1-D three-point stencil.
 * NTHREADS threads each own a chunk of the array; each phase they compute
 * the next generation from the current one, then wait on a
 * pthread_barrier.  The thread that receives PTHREAD_BARRIER_SERIAL_THREAD
 * records its index for that phase.  The checksum is deterministic; the
 * serial-thread sequence depends on arrival order at the barrier.
 * argv[1] = window width (extra per-element work delay). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3
#define N 96
#define PHASES 10

static unsigned grid[2][N];
static int serial_tid[PHASES];
static int serial_hits[PHASES];
static pthread_barrier_t bar;
static pthread_mutex_t hits_lock = PTHREAD_MUTEX_INITIALIZER;
static int window = 300;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    int lo = id * N / NTHREADS, hi = (id + 1) * N / NTHREADS;
    for (int ph = 0; ph < PHASES; ph++) {
        const unsigned *cur = grid[ph & 1];
        unsigned *nxt = grid[(ph + 1) & 1];
        for (int i = lo; i < hi; i++) {
            unsigned l = cur[(i + N - 1) % N], c = cur[i], r = cur[(i + 1) % N];
            nxt[i] = (l * 3u + c * 5u + r * 7u + (unsigned)ph) % 1000003u;
            delay(window);
        }
        int rc = pthread_barrier_wait(&bar);
        if (rc == PTHREAD_BARRIER_SERIAL_THREAD) {
            serial_tid[ph] = id; /* exactly one thread per phase writes */
            pthread_mutex_lock(&hits_lock);
            serial_hits[ph]++;
            pthread_mutex_unlock(&hits_lock);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    for (int i = 0; i < N; i++) grid[0][i] = (unsigned)(i * i + 1);
    pthread_barrier_init(&bar, NULL, NTHREADS);
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    unsigned long sum = 0;
    for (int i = 0; i < N; i++) sum = sum * 31 + grid[PHASES & 1][i];
    int ok = 1;
    for (int p = 0; p < PHASES; p++) ok &= serial_hits[p] == 1;
    printf("checksum=%lu serial=", sum);
    for (int p = 0; p < PHASES; p++) printf("%d", serial_tid[p]);
    printf(" one_serial_per_phase=%s\n", ok ? "yes" : "no");
    return 0;
}
