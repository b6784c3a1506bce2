/* counter_race.c - lost-update race on a plain shared int.
 * Each thread does read / delay / write on `counter`, so concurrent
 * increments overwrite each other.  argv[1] = race-window width, argv[2] =
 * increments per thread (default 30000). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3
#define ITERS 30000

static volatile int counter; /* plain (non-atomic) shared int */
static int window = 40;
static int iters = ITERS;
static pthread_barrier_t start;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    for (int k = 0; k < iters; k++) {
        int tmp = counter;   /* read */
        delay(window);       /* race window */
        counter = tmp + 1;   /* write */
        delay(window);       /* outside the window */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    if (argc > 2) iters = atoi(argv[2]);
    pthread_t th[NTHREADS];
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    printf("expected=%d final=%d\n", NTHREADS * iters, counter);
    return 0;
}
