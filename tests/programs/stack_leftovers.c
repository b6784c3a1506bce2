/* stack_leftovers.c - two threads update a shared counter with no lock (its granule changes
 * owner, so the access callbacks take their slow path), then read a local buffer they never
 * wrote, which holds what the deeper frames before it left: those of the counter's callbacks
 * (as 7-Zip's `7zr a` reads a partly set local). Undefined behaviour in C, and common in real
 * code. The buffer's bytes and the counter (racy: lost updates) go into a value main reads;
 * a fixed line is printed. */
#include <pthread.h>
#include <stdio.h>

static long counter;
static unsigned long seen[2];

__attribute__((noinline)) static void work(int n)
{
    for (int i = 0; i < n; i++) counter += 1;
}

__attribute__((noinline)) static unsigned long peek(void)
{
    volatile unsigned char buf[4096];
    unsigned long h = 0;
    for (int i = 0; i < 4096; i += 8) h = h * 31 + buf[i];
    return h;
}

static void *worker(void *arg)
{
    long k = (long)arg;
    unsigned long h = 0;
    for (int r = 0; r < 200; r++) {
        work(20);
        h = h * 17 + peek();
    }
    seen[k] = h;
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    for (long k = 0; k < 2; k++) pthread_create(&t[k], NULL, worker, (void *)k);
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    volatile unsigned long h = seen[0] * 31 + seen[1] + (unsigned long)counter;
    (void)h;
    printf("done\n");
    return 0;
}
