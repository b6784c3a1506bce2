/* bank.c - transfers between accounts protected by per-account mutexes.
 * Locks are always taken in account-index order, so there is no deadlock.
 * A transfer only happens if the source has enough money, so which
 * transfers succeed (and the final per-account balances) depend on the
 * interleaving, while the total is invariant.  There is no data race.
 * argv[1] = window width (delay while holding both locks / between
 * transfers). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NACCOUNTS 5
#define NTHREADS 3
#define TRANSFERS 300
#define INITIAL 100

struct account {
    pthread_mutex_t lock;
    int balance;
};

static struct account acct[NACCOUNTS];
static int window = 2000;
static pthread_barrier_t start;
static int done_ok[NTHREADS], done_fail[NTHREADS];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static unsigned lcg(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

static void *teller(void *arg)
{
    int id = (int)(long)arg;
    unsigned seed = 1000u + (unsigned)id * 7919u; /* fixed per-thread seed */
    pthread_barrier_wait(&start);
    for (int t = 0; t < TRANSFERS; t++) {
        int from = (int)(lcg(&seed) % NACCOUNTS);
        int to = (int)(lcg(&seed) % (NACCOUNTS - 1));
        if (to >= from) to++;
        int amount = 1 + (int)(lcg(&seed) % 60);
        int lo = from < to ? from : to, hi = from < to ? to : from;
        pthread_mutex_lock(&acct[lo].lock);
        pthread_mutex_lock(&acct[hi].lock);
        if (acct[from].balance >= amount) {
            acct[from].balance -= amount;
            delay(window);
            acct[to].balance += amount;
            done_ok[id]++;
        } else {
            done_fail[id]++;
        }
        pthread_mutex_unlock(&acct[hi].lock);
        pthread_mutex_unlock(&acct[lo].lock);
        delay(window);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    for (int i = 0; i < NACCOUNTS; i++) {
        pthread_mutex_init(&acct[i].lock, NULL);
        acct[i].balance = INITIAL;
    }
    pthread_t th[NTHREADS];
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, teller, (void *)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    int total = 0, ok = 0, fail = 0;
    printf("balances:");
    for (int i = 0; i < NACCOUNTS; i++) {
        printf(" %d", acct[i].balance);
        total += acct[i].balance;
        pthread_mutex_destroy(&acct[i].lock);
    }
    for (int i = 0; i < NTHREADS; i++) {
        ok += done_ok[i];
        fail += done_fail[i];
    }
    printf("\nsucceeded=%d failed=%d total=%d expected_total=%d\n", ok, fail, total,
           NACCOUNTS * INITIAL);
    return 0;
}
