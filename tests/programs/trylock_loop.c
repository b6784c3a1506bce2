/* trylock_loop.c - threads acquire a mutex only via pthread_mutex_trylock,
 * retrying (with a short delay) until it succeeds, and count failures.
 * argv[1] = width of the delay loop held inside the critical section. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3
#define ROUNDS 300

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int window = 5000;
static int shared_total;
static int order_hash;
static int arrived;
static pthread_barrier_t start;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

struct arg { int id; long fails; };

static void *worker(void *p)
{
    struct arg *a = p;
    pthread_barrier_wait(&start);
    /* spin gate so that all threads really start together */
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < NTHREADS) delay(10);
    for (int r = 0; r < ROUNDS; r++) {
        while (pthread_mutex_trylock(&mu) != 0) {
            a->fails++;
            delay(1000);
        }
        shared_total += a->id + 1;
        order_hash = order_hash * 31 + a->id;
        delay(window);
        pthread_mutex_unlock(&mu);
        delay(window / 2);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t th[NTHREADS];
    struct arg args[NTHREADS];
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) {
        args[i].id = i; args[i].fails = 0;
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < NTHREADS; i++) printf("thread %d: trylock failures=%ld\n", i, args[i].fails);
    printf("total=%d order_hash=%08x\n", shared_total, (unsigned)order_hash);
    return 0;
}
