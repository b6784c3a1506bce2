/* main_pthread_exit.c - main ends with pthread_exit, called from a callee
 * under a cleanup handler, while two workers still run; the process ends
 * (status 0) when the last worker returns. The workers race on a plain
 * counter, wait until main's cleanup handler ran, and the last one to
 * finish prints the counter and the order in which the threads ended.
 * argv[1]: race-window width. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int main_cleaned, done;
static char order[64];
static volatile long counter;
static int window = 3000;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void note(const char *what)
{
    strcat(order, what);
    strcat(order, " ");
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < 30; i++) {
        long v = counter;
        delay(window);
        counter = v + 1;
    }
    pthread_mutex_lock(&mu);
    while (!main_cleaned) pthread_cond_wait(&cv, &mu);
    note(id == 1 ? "w1" : "w2");
    if (++done == 2) printf("counter=%ld order: %s\n", (long)counter, order);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void main_cleanup(void *arg)
{
    pthread_mutex_lock(&mu);
    note((const char *)arg);
    main_cleaned = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void leave(void)
{
    pthread_exit(NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t a, b;
    pthread_create(&a, NULL, worker, (void *)1L);
    pthread_create(&b, NULL, worker, (void *)2L);
    pthread_cleanup_push(main_cleanup, "main");
    for (int i = 0; i < 30; i++) {
        long v = counter;
        delay(window);
        counter = v + 1;
    }
    leave();
    pthread_cleanup_pop(0);
    return 1;
}
