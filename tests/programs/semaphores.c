/* semaphores.c - data handed between threads through POSIX semaphores only (no
 * lock): a ping-pong of values through a one-slot box (sem_post/sem_wait), a
 * bounded ring of 4 slots filled by two producers and drained by two consumers
 * (counting semaphores; the ring's indices under a semaphore used as a binary
 * lock), a consumer that polls with sem_trywait between waits, and timed waits
 * that succeed (far deadline) and time out (past deadline, empty semaphore).
 * Output: the ping-pong's checksum, the ring's sum and count, the timed waits'
 * outcomes: the same every run. argv[1] = items per producer. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static sem_t ping, pong;
static long box, reply;
static int rounds = 200;

static void *echo(void *arg)
{
    (void)arg;
    for (int i = 0; i < rounds; i++) {
        sem_wait(&ping);
        reply = box * 3 + 1; /* read what the other thread wrote before its post */
        sem_post(&pong);
    }
    return NULL;
}

#define SLOTS 4
static long ring[SLOTS];
static int head, tail;
static sem_t empty, full, idx; /* idx: a semaphore as a binary lock */
static int items = 300;
static long sum[2], count[2];

static void *producer(void *arg)
{
    long base = (long)(size_t)arg * 1000000;
    for (int i = 0; i < items; i++) {
        sem_wait(&empty);
        sem_wait(&idx);
        ring[head] = base + i;
        head = (head + 1) % SLOTS;
        sem_post(&idx);
        sem_post(&full);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    int me = (int)(size_t)arg;
    for (int i = 0; i < items; i++) {
        if (me == 1) {
            /* Poll first: whether the poll succeeds depends on timing (a recorded result). */
            while (sem_trywait(&full) != 0) {
                if (errno != EAGAIN) return NULL;
                if (i % 2) { sem_wait(&full); break; }
            }
        } else {
            sem_wait(&full);
        }
        sem_wait(&idx);
        long v = ring[tail];
        tail = (tail + 1) % SLOTS;
        sem_post(&idx);
        sem_post(&empty);
        sum[me] += v;
        count[me]++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) items = atoi(argv[1]);
    sem_init(&ping, 0, 0);
    sem_init(&pong, 0, 0);
    pthread_t e;
    pthread_create(&e, NULL, echo, NULL);
    long check = 0;
    for (int i = 0; i < rounds; i++) {
        box = i * 7 + check % 1000;
        sem_post(&ping);
        sem_wait(&pong);
        check += reply;
    }
    pthread_join(e, NULL);
    printf("ping-pong: %d rounds, checksum %ld\n", rounds, check);

    sem_init(&empty, 0, SLOTS);
    sem_init(&full, 0, 0);
    sem_init(&idx, 0, 1);
    pthread_t t[4];
    for (long k = 0; k < 2; k++) {
        pthread_create(&t[k], NULL, producer, (void *)(size_t)(k + 1));
        pthread_create(&t[2 + k], NULL, consumer, (void *)(size_t)k);
    }
    for (int k = 0; k < 4; k++) pthread_join(t[k], NULL);
    printf("ring: %ld items, sum %ld\n", count[0] + count[1], sum[0] + sum[1]);

    struct timespec far, past;
    clock_gettime(CLOCK_REALTIME, &far);
    past = far;
    far.tv_sec += 60;
    past.tv_sec -= 1;
    sem_post(&ping);
    int a = sem_timedwait(&ping, &far);
    int b = sem_timedwait(&ping, &past);
    int berr = b ? errno : 0;
    printf("timed waits: %d, %d (%s)\n", a, b, berr == ETIMEDOUT ? "timed out" : "?");
    return 0;
}
