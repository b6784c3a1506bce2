/* sigalrm.c - a setitimer(ITIMER_REAL) SIGALRM arrives mid-run (one-shot,
 * 2 ms after all threads are running) while main and 2 worker threads
 * compute.  The handler increments a volatile sig_atomic_t and records which thread it ran on.
 * Each thread does 600 iterations of a delay loop (argv[1] = width) and
 * records the iteration at which it first saw the signal count change.
 * Prints those iterations, the handling thread and the signal count. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define NTHREADS 3   /* main + 2 workers */
#define ITERS 600

static volatile sig_atomic_t ticks;
static volatile sig_atomic_t handled_by = -1;
static __thread int my_idx;
static int window = 20000;
static int arrived;
static int seen_at[NTHREADS];
static unsigned work[NTHREADS];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void on_alarm(int sig)
{
    (void)sig;
    ticks++;
    handled_by = my_idx;
}

static void compute(int idx)
{
    my_idx = idx;
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < NTHREADS) delay(10);
    if (idx == 0) {  /* main arms the timer once everybody is running */
        struct itimerval it;
        memset(&it, 0, sizeof it);
        it.it_value.tv_usec = 2000;  /* one shot, 2 ms from now */
        setitimer(ITIMER_REAL, &it, NULL);
    }
    unsigned x = (unsigned)idx + 1;
    seen_at[idx] = -1;
    for (int k = 0; k < ITERS; k++) {
        delay(window);
        x = x * 1664525u + 1013904223u;
        if (seen_at[idx] < 0 && ticks > 0) seen_at[idx] = k;
    }
    work[idx] = x;
}

static void *worker(void *arg)
{
    compute((int)(long)arg);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    pthread_t th[NTHREADS];
    for (long i = 1; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    compute(0);
    for (int i = 1; i < NTHREADS; i++) pthread_join(th[i], NULL);
    struct itimerval it;
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_REAL, &it, NULL);
    for (int i = 0; i < NTHREADS; i++)
        printf("thread %d: first saw SIGALRM at iteration %d of %d (work=%08x)\n", i, seen_at[i], ITERS, work[i]);
    printf("signals=%d handled_by_thread=%d\n", (int)ticks, (int)handled_by);
    return 0;
}
