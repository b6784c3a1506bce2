/* threads_rand.c - 3 threads draw from the shared global generators rand()
 * (seeded once with srand(42)) and random() (srandom(7)).  glibc serialises
 * the generator state with an internal lock, so the overall sequence is
 * fixed but which thread gets which value depends on the interleaving.
 * argv[1] = delay-loop width between draws.  Prints each thread's draws. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3
#define DRAWS 6

static int window = 30000;
static int arrived;
static long drawn[NTHREADS][2 * DRAWS];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < NTHREADS) delay(10);
    for (int k = 0; k < DRAWS; k++) {
        drawn[id][2 * k] = rand();
        delay(window);
        drawn[id][2 * k + 1] = random();
        delay(window);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    srand(42);
    srandom(7);
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    unsigned long long sum = 0;
    for (int i = 0; i < NTHREADS; i++) {
        printf("thread %d rand/random:", i);
        for (int k = 0; k < 2 * DRAWS; k++) {
            printf(" %ld", drawn[i][k]);
            sum += (unsigned long long)drawn[i][k];
        }
        printf("\n");
    }
    printf("sum of all draws=%llu (interleaving-independent)\n", sum);
    return 0;
}
