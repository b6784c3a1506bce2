/* interrupted.c - a program that never ends by itself: two threads take two
 * mutexes in opposite orders and deadlock (always: each holds its first
 * lock until both do), a worker races on a plain counter and sleeps in a
 * loop forever, and main prints "ready" and its pid once the worker made
 * progress, then joins a deadlocked thread. Only a signal ends it (SIGINT,
 * SIGTERM, SIGHUP: status 128 + signal). argv[1]: race-window width. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both;
static volatile long counter;
static volatile int progress;
static int window = 2000;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *ab(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&a);
    pthread_barrier_wait(&both);
    pthread_mutex_lock(&b); /* never: the other thread holds b */
    return NULL;
}

static void *ba(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&b);
    pthread_barrier_wait(&both);
    pthread_mutex_lock(&a);
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        long v = counter;
        delay(window);
        counter = v + 1;
        progress++;
        usleep(200);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_barrier_init(&both, NULL, 2);
    pthread_t t1, t2, w;
    pthread_create(&t1, NULL, ab, NULL);
    pthread_create(&t2, NULL, ba, NULL);
    pthread_create(&w, NULL, worker, NULL);
    while (progress < 20) usleep(100);
    printf("ready pid=%ld\n", (long)getpid());
    fflush(stdout);
    pthread_join(t1, NULL);
    printf("unreachable\n");
    return 0;
}
