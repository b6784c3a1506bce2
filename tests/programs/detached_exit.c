/* detached_exit.c - a detached thread keeps incrementing a mutex-protected
 * counter (printing nothing) while main does some work (argv[1] = delay-loop
 * width of that work), reads the counter under the mutex, prints it and
 * calls exit(0) while the detached thread is still running.  The detached
 * thread's loop is bounded (it would stop after ~1 s) but main exits long
 * before that. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static volatile int started;
static int window = 2000000;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *background(void *arg)
{
    (void)arg;
    started = 1;
    for (long k = 0; k < 2000000; k++) {
        pthread_mutex_lock(&mu);
        counter++;
        pthread_mutex_unlock(&mu);
        delay(200);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_attr_t at;
    pthread_t th;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_create(&th, &at, background, NULL);
    pthread_attr_destroy(&at);
    while (!started) delay(100);
    unsigned x = 7;
    for (int r = 0; r < 4; r++) {
        delay(window / 4);
        x = x * 2654435761u + (unsigned)r;
    }
    pthread_mutex_lock(&mu);
    long seen = counter;
    pthread_mutex_unlock(&mu);
    printf("work=%u counter_seen=%ld\n", x % 1000u, seen);
    fflush(stdout);
    exit(0);
}
