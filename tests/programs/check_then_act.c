/* check_then_act.c - atomicity violation: "if (balance >= amt) { window;
 * balance -= amt; }" executed concurrently without a lock, so the balance can
 * be overdrawn and updates can be lost.  argv[1] = race-window width, argv[2]
 * = withdrawal attempts per thread (default 10000; the initial balance is 3/2
 * of it). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3
#define ATTEMPTS 10000
#define INITIAL 15000
#define AMOUNT 1

static volatile int balance = INITIAL;
static int window = 150;
static int attempts = ATTEMPTS, initial = INITIAL;
static pthread_barrier_t start;

struct result {
    int granted;    /* withdrawals that passed the check */
    int violations; /* times balance was observed negative after acting */
};
static struct result res[NTHREADS];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
    struct result *r = arg;
    pthread_barrier_wait(&start);
    for (int k = 0; k < attempts; k++) {
        if (balance >= AMOUNT) {     /* check */
            delay(window);           /* race window */
            balance -= AMOUNT;       /* act (itself a non-atomic RMW) */
            r->granted++;
            if (balance < 0) r->violations++;
        }
        delay(window / 2);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    if (argc > 2) {
        attempts = atoi(argv[2]);
        initial = balance = attempts * 3 / 2;
    }
    pthread_t th[NTHREADS];
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, &res[i]);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    int granted = 0, viol = 0;
    for (int i = 0; i < NTHREADS; i++) {
        granted += res[i].granted;
        viol += res[i].violations;
    }
    printf("initial=%d granted=%d final_balance=%d overdraw_violations=%d consistent=%s\n",
           initial, granted, balance, viol,
           (initial - granted * AMOUNT == balance) ? "yes" : "no");
    return 0;
}
