/* deadlock.c - a lock-order deadlock, always: two threads race on a plain
 * counter (released together by a barrier), then each takes one of two
 * mutexes, meets the other at a barrier and asks for the other mutex. main prints the counter's progress so far
 * and joins the first thread. Nothing ends it but the recorder's deadlock
 * detection (or a signal). argv[1]: race-window width. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both, started, go;
static volatile long counter;
static int window = 2000;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void race(void)
{
    for (int i = 0; i < 200; i++) {
        long v = counter;
        delay(window);
        counter = v + 1;
    }
}

static void *ab(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&go); /* both race from the same moment */
    race();
    pthread_mutex_lock(&a);
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&both);
    pthread_mutex_lock(&b); /* never: the other thread holds b */
    return NULL;
}

static void *ba(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&go);
    race();
    pthread_mutex_lock(&b);
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&both);
    pthread_mutex_lock(&a); /* never: the other thread holds a */
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_barrier_init(&both, NULL, 2);
    pthread_barrier_init(&started, NULL, 3);
    pthread_barrier_init(&go, NULL, 2);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, ab, NULL);
    pthread_create(&t2, NULL, ba, NULL);
    pthread_barrier_wait(&started);
    printf("both hold a lock; counter %ld of 400\n", counter);
    fflush(stdout);
    pthread_join(t1, NULL);
    printf("unreachable\n");
    return 0;
}
