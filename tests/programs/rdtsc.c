/* rdtsc.c - two threads read the time-stamp counter with __rdtsc()
 * (x86intrin.h) 5 times each, with a delay loop between reads (argv[1] =
 * width).  Main prints the raw first reading, the per-thread deltas between
 * successive reads, which thread read first and the cross-thread gap.
 * x86-64 only. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#define READS 5

static int window = 20000;
static int arrived;
static unsigned long long tsc[2][READS];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *reader(void *arg)
{
    int id = (int)(long)arg;
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < 2) delay(10);
    for (int k = 0; k < READS; k++) {
        tsc[id][k] = __rdtsc();
        delay(window);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t th[2];
    for (long i = 0; i < 2; i++) pthread_create(&th[i], NULL, reader, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        printf("thread %d: first=%llu deltas:", i, tsc[i][0]);
        for (int k = 1; k < READS; k++) printf(" %llu", tsc[i][k] - tsc[i][k - 1]);
        printf("\n");
    }
    int first = tsc[0][0] <= tsc[1][0] ? 0 : 1;
    printf("thread %d read first, by %llu cycles; interleaving:", first, tsc[1 - first][0] - tsc[first][0]);
    int a = 0, b = 0;
    while (a < READS || b < READS) {  /* merge the two sorted sequences */
        if (b == READS || (a < READS && tsc[0][a] <= tsc[1][b])) { printf(" 0"); a++; }
        else { printf(" 1"); b++; }
    }
    printf("\n");
    return 0;
}
