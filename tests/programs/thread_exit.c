/* thread_exit.c - threads end every way glibc allows, while racing on a plain
 * counter:
 *   T0 calls pthread_exit((void *)100) three calls deep, under two nested
 *      pthread_cleanup_push handlers (they run in reverse order: "b0 a0");
 *   T1 returns 101 after pthread_cleanup_pop(1) ran its handler ("p1");
 *   T2 calls pthread_exit((void *)102) from its start routine under one
 *      handler ("e2");
 *   T3 is cancelled while blocked in pthread_cond_wait; its handler unlocks
 *      the mutex glibc re-acquired for it ("w3");
 *   T4 is cancelled in a nanosleep/usleep loop ("s4");
 *   T5 is cancelled at pthread_testcancel() in a busy loop ("t5");
 *   T6 is cancelled while blocked in read() on an empty pipe ("r6");
 *   a detached thread is still running (bumping the counter, sleeping) when
 *   main returns.
 * Handlers append to a mutex-protected log (the order varies with the
 * interleaving). Main joins every thread and prints each exit value (-1 for
 * PTHREAD_CANCELED), the log and the racy counter. argv[1]: race-window
 * width of the counter updates. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[256];
static volatile long counter;
static int window = 3000;

static pthread_mutex_t wait_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_cv = PTHREAD_COND_INITIALIZER;
static int waiting; /* under wait_mu: T3 is about to wait */
static int pipe_fd[2];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void bump(int times)
{
    for (int i = 0; i < times; i++) {
        long v = counter;
        delay(window);
        counter = v + 1;
    }
}

static void note(void *what)
{
    pthread_mutex_lock(&log_mu);
    strcat(log_buf, (const char *)what);
    strcat(log_buf, " ");
    pthread_mutex_unlock(&log_mu);
}

static void unlock_and_note(void *what)
{
    pthread_mutex_unlock(&wait_mu);
    note(what);
}

static void depth3(int id)
{
    bump(20);
    pthread_exit((void *)(long)(100 + id));
}
static void depth2(int id) { depth3(id); note("unreachable2"); }
static void depth1(int id) { depth2(id); note("unreachable1"); }

static void *t0(void *arg)
{
    (void)arg;
    pthread_cleanup_push(note, "a0");
    pthread_cleanup_push(note, "b0");
    depth1(0);
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    return NULL;
}

static void *t1(void *arg)
{
    (void)arg;
    pthread_cleanup_push(note, "p1");
    bump(20);
    pthread_cleanup_pop(1);
    return (void *)101L;
}

static void *t2(void *arg)
{
    (void)arg;
    pthread_cleanup_push(note, "e2");
    bump(20);
    pthread_exit((void *)102L);
    pthread_cleanup_pop(0);
    return NULL;
}

static void *t3(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wait_mu);
    waiting = 1;
    pthread_cleanup_push(unlock_and_note, "w3");
    for (;;) pthread_cond_wait(&wait_cv, &wait_mu);
    pthread_cleanup_pop(1);
    return NULL;
}

static void *t4(void *arg)
{
    (void)arg;
    pthread_cleanup_push(note, "s4");
    for (int i = 0;; i++) {
        if (i & 1) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        } else {
            usleep(150);
        }
    }
    pthread_cleanup_pop(0);
    return NULL;
}

static void *t5(void *arg)
{
    (void)arg;
    pthread_cleanup_push(note, "t5");
    for (;;) {
        bump(1);
        pthread_testcancel();
    }
    pthread_cleanup_pop(0);
    return NULL;
}

static void *t6(void *arg)
{
    (void)arg;
    char c;
    pthread_cleanup_push(note, "r6");
    for (;;) {
        if (read(pipe_fd[0], &c, 1) <= 0) break;
    }
    pthread_cleanup_pop(0);
    return (void *)999L;
}

static void *runner(void *arg)
{
    (void)arg;
    for (;;) {
        bump(1);
        usleep(50);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    if (pipe(pipe_fd) != 0) return 2;
    void *(*fns[])(void *) = {t0, t1, t2, t3, t4, t5, t6};
    enum { N = sizeof fns / sizeof fns[0] };
    pthread_t th[N];
    for (int i = 0; i < N; i++) pthread_create(&th[i], NULL, fns[i], NULL);
    pthread_t bg;
    pthread_create(&bg, NULL, runner, NULL);
    pthread_detach(bg);
    bump(20);
    /* T3 must be waiting (it holds wait_mu until the wait releases it). */
    for (;;) {
        pthread_mutex_lock(&wait_mu);
        int w = waiting;
        pthread_mutex_unlock(&wait_mu);
        if (w) break;
        usleep(100);
    }
    for (int i = 3; i < N; i++) pthread_cancel(th[i]);
    for (int i = 0; i < N; i++) {
        void *r;
        pthread_join(th[i], &r);
        printf("T%d -> %ld\n", i, r == PTHREAD_CANCELED ? -1L : (long)r);
    }
    printf("log: %s\n", log_buf);
    printf("counter=%ld\n", (long)counter);
    return 0;
}
