/* false_share.c - false sharing, and a race inside it: two threads store to interleaved
 * 16-byte elements of one array (thread 0 the even ones, thread 1 the odd ones: both threads
 * write every 64-byte line, as a bit-reversal copy or a cyclic distribution does) for a number
 * of rounds (starting together), and in every eighth round read their neighbour's element
 * after each store, which the other thread is writing (a data race: what they see depends on
 * the interleaving). Main prints what each thread saw (varies from run to run) and the
 * array's final sum (always the same).
 * argv[1]: the race window (delay loop iterations between a write and the racy read). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N 2048
#define ROUNDS 64

struct elem {
    long v;
    long pad;
} __attribute__((aligned(16)));

static struct elem x[N];
static long window = 200;
static long seen[2];
static pthread_barrier_t start;

static void *update(void *arg)
{
    long t = (long)arg;
    long s = 0, w = window;
    pthread_barrier_wait(&start);
    for (long r = 1; r <= ROUNDS; r++)
        for (long i = t; i < N; i += 2) {
            x[i].v = r * (t + 1) + i;
            for (long d = 0; d < w; d++)
                __asm__ volatile("" ::: "memory");
            if (r % 8 == 0)
                s = s * 31 + x[i ^ 1].v;
        }
    seen[t] = s;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        window = atol(argv[1]);
    pthread_t th[2];
    pthread_barrier_init(&start, NULL, 2);
    for (long t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, update, (void *)t);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    long sum = 0;
    for (int i = 0; i < N; i++)
        sum += x[i].v;
    printf("seen %ld %ld sum %ld\n", seen[0], seen[1], sum);
    return 0;
}
