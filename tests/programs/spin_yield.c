/* spin_yield.c - spin with sched_yield() on a plain volatile flag.
 * Two setter stages: thread A sets flag1 after some work, thread B waits
 * for flag1 (yielding) then sets flag2; main's waiter spins on flag2.
 * argv[1] = delay-loop width of the work.  Prints spin/yield counts. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int flag1, flag2;  /* plain shared flags */
static volatile int value;
static int window = 30000;
static pthread_barrier_t start;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *stage_a(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    delay(window);
    value = 7;
    flag1 = 1;
    return NULL;
}

static void *stage_b(void *arg)
{
    long *yields = arg;
    pthread_barrier_wait(&start);
    long n = 0;
    while (!flag1) { n++; sched_yield(); }
    delay(window / 2);
    value = value * 6;
    flag2 = 1;
    *yields = n;
    return NULL;
}

static void *waiter(void *arg)
{
    long *yields = arg;
    pthread_barrier_wait(&start);
    long n = 0;
    while (!flag2) { n++; sched_yield(); }
    *yields = n;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t t[3];
    long ya = 0, yb = 0;
    pthread_barrier_init(&start, NULL, 3);
    pthread_create(&t[0], NULL, stage_a, NULL);
    pthread_create(&t[1], NULL, stage_b, &ya);
    pthread_create(&t[2], NULL, waiter, &yb);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    printf("stage_b_yields=%ld waiter_yields=%ld value=%d\n", ya, yb, value);
    return 0;
}
