/* timedwait.c - pthread_cond_timedwait with a 2 ms timeout that sometimes
 * expires and sometimes is beaten by the producer's signal.
 * The producer posts 20 items with a delay-loop pause between them
 * (argv[1] = delay-loop unit; the pause is 1..4 units, from a fixed LCG).
 * The consumer does timed waits until it has all 20 items (at most 80
 * waits) and prints the sequence of outcomes: S = signalled (got an item),
 * T = timed out. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITEMS 20
#define MAXWAITS 80
#define TIMEOUT_NS 2000000L

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static int pending;
static int window = 1500000;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *producer(void *arg)
{
    (void)arg;
    unsigned x = 12345;
    for (int i = 0; i < ITEMS; i++) {
        x = x * 1103515245u + 12345u;
        delay(window * (int)(1 + (x >> 16) % 4));
        pthread_mutex_lock(&mu);
        pending++;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    char *seq = arg;
    int got = 0, n = 0;
    pthread_mutex_lock(&mu);
    while (got < ITEMS && n < MAXWAITS) {
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_nsec += TIMEOUT_NS;
        if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
        int rc = 0;
        while (pending == 0 && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&cv, &mu, &dl);
        if (pending > 0) { pending--; got++; seq[n++] = 'S'; }
        else seq[n++] = 'T';
    }
    pthread_mutex_unlock(&mu);
    seq[n] = '\0';
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &ca);
    pthread_condattr_destroy(&ca);
    static char seq[MAXWAITS + 1];
    pthread_t p, c;
    pthread_create(&c, NULL, consumer, seq);
    pthread_create(&p, NULL, producer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    int s = 0, t = 0;
    for (const char *q = seq; *q; q++) { if (*q == 'S') s++; else t++; }
    printf("signalled=%d timed_out=%d left=%d\nseq=%s\n", s, t, pending, seq);
    pthread_cond_destroy(&cv);
    return 0;
}
