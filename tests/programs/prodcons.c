/* prodcons.c - bounded buffer, 2 producers / 2 consumers, using a
 * pthread mutex and condition variables (wait / signal / broadcast).
 * Which consumer gets which item depends on the interleaving, so the
 * per-consumer sums vary; the grand total is invariant.
 * argv[1] = window width (per-item "processing" delay outside the lock). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CAP 4
#define NPROD 2
#define NCONS 2
#define ITEMS_PER_PROD 500

static int buf[CAP];
static int head, tail, count;
static int produced_done; /* number of producers finished */
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static int window = 2000;

static long cons_sum[NCONS];
static int cons_count[NCONS];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *producer(void *arg)
{
    int id = (int)(long)arg;
    for (int i = 0; i < ITEMS_PER_PROD; i++) {
        int item = id * 100000 + i + 1;
        delay(window / 2); /* "produce" */
        pthread_mutex_lock(&m);
        while (count == CAP) pthread_cond_wait(&not_full, &m);
        buf[tail] = item;
        tail = (tail + 1) % CAP;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    produced_done++;
    if (produced_done == NPROD) pthread_cond_broadcast(&not_empty); /* wake all consumers */
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *consumer(void *arg)
{
    int id = (int)(long)arg;
    for (;;) {
        pthread_mutex_lock(&m);
        while (count == 0 && produced_done < NPROD) pthread_cond_wait(&not_empty, &m);
        if (count == 0) { /* all producers done and buffer drained */
            pthread_mutex_unlock(&m);
            break;
        }
        int item = buf[head];
        head = (head + 1) % CAP;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&m);
        delay(window); /* "consume" */
        cons_sum[id] += item;
        cons_count[id]++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t p[NPROD], c[NCONS];
    for (long i = 0; i < NCONS; i++) pthread_create(&c[i], NULL, consumer, (void *)i);
    for (long i = 0; i < NPROD; i++) pthread_create(&p[i], NULL, producer, (void *)i);
    for (int i = 0; i < NPROD; i++) pthread_join(p[i], NULL);
    for (int i = 0; i < NCONS; i++) pthread_join(c[i], NULL);
    long total = 0;
    int n = 0;
    for (int i = 0; i < NCONS; i++) {
        printf("consumer %d: items=%d sum=%ld\n", i, cons_count[i], cons_sum[i]);
        total += cons_sum[i];
        n += cons_count[i];
    }
    printf("total_items=%d total_sum=%ld\n", n, total);
    return 0;
}
