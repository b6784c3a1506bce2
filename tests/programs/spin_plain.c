/* spin_plain.c - busy-wait on a plain (non-atomic) volatile flag.
 * The waiter sets a plain `ready` flag and spins on `flag`; the setter spins
 * on `ready`, does some work (argv[1] = delay-loop width, i.e. how long the
 * work takes) and then sets `flag`.  The waiter counts its spins.  The spin count depends on timing; the result is deterministic. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int flag;     /* plain shared flag, no atomics, no lock */
static volatile int ready;    /* waiter -> setter: "I am spinning now" */
static volatile int result;   /* published before flag */
static int window = 1000000;
static pthread_barrier_t start;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *setter(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    while (!ready) __asm__ volatile("" ::: "memory");  /* plain spin too */
    unsigned x = 1;
    for (int k = 0; k < 1000; k++) x = x * 1103515245u + 12345u;
    delay(window);
    result = (int)(x % 100000u);
    flag = 1;
    return NULL;
}

static void *waiter(void *arg)
{
    long *spins = arg;
    pthread_barrier_wait(&start);
    long n = 0;
    ready = 1;
    while (!flag) {
        n++;
        delay(50);
    }
    *spins = n;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t a, b;
    long spins = 0;
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&b, NULL, waiter, &spins);
    pthread_create(&a, NULL, setter, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&start);
    printf("spins=%ld result=%d\n", spins, result);
    return 0;
}
