/* huge_heap.c - a program sized for a maximum problem, as scientific codes
 * are: two threads each malloc 4 blocks of 2.15 GB (17.2 GB in total, far
 * more than is ever touched), write a few bytes spread over each block,
 * free one block and allocate it again, while racing on a plain counter.
 * It also asks for what glibc's malloc refuses (2^46 bytes, SIZE_MAX, an
 * overflowing calloc). Main prints which allocations succeeded, a checksum
 * of the bytes read back, whether the blocks are disjoint, their addresses
 * (which block gets which range depends on the threads' interleaving) and
 * the racy counter. argv[1]: race-
 * window width. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 2150000000UL
#define PER_THREAD 4

static volatile long counter;
static int window = 3000;
static unsigned char *blocks[2][PER_THREAD];
static unsigned long sums[2];
static int ok[2];
static void *volatile sink[3];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void touch(unsigned char *b, unsigned long seed)
{
    for (unsigned long off = 0; off < BLOCK; off += BLOCK / 7) b[off] = (unsigned char)(seed + off / 4096);
    b[BLOCK - 1] = (unsigned char)seed;
}

static unsigned long sum(const unsigned char *b)
{
    unsigned long s = 0;
    for (unsigned long off = 0; off < BLOCK; off += BLOCK / 7) s = s * 31 + b[off];
    return s * 31 + b[BLOCK - 1];
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        blocks[id][i] = malloc(BLOCK);
        if (blocks[id][i]) {
            ok[id]++;
            touch(blocks[id][i], (unsigned long)(id * 10 + i));
        }
        long v = counter;
        delay(window);
        counter = v + 1;
    }
    /* Give one block back and take another of the same size. */
    free(blocks[id][1]);
    blocks[id][1] = malloc(BLOCK);
    if (blocks[id][1]) touch(blocks[id][1], (unsigned long)(id * 10 + 9));
    for (int i = 0; i < PER_THREAD; i++)
        if (blocks[id][i]) sums[id] = sums[id] * 1000003 + sum(blocks[id][i]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    /* Sizes glibc refuses (volatile: known to the compiler, they would only warn). */
    volatile size_t huge_n = 1UL << 46, max_n = SIZE_MAX, half_n = SIZE_MAX / 2;
    void *huge = malloc(huge_n);
    void *max = malloc(max_n);
    void *over = calloc(half_n, 3);
    sink[0] = huge; /* (escaping, so the compiler cannot assume the allocations succeed) */
    sink[1] = max;
    sink[2] = over;
    printf("allocated %d+%d blocks of %lu bytes; 2^46: %s; SIZE_MAX: %s; calloc overflow: %s\n", ok[0], ok[1],
           BLOCK, huge ? "ok" : "NULL", max ? "ok" : "NULL", over ? "ok" : "NULL");
    printf("checksums %lx %lx\n", sums[0], sums[1]);
    int distinct = 1;
    for (int a = 0; a < 2 * PER_THREAD; a++)
        for (int b = a + 1; b < 2 * PER_THREAD; b++) {
            uintptr_t x = (uintptr_t)blocks[a / PER_THREAD][a % PER_THREAD];
            uintptr_t y = (uintptr_t)blocks[b / PER_THREAD][b % PER_THREAD];
            if (x && y && (x < y ? y - x : x - y) < BLOCK) distinct = 0;
        }
    printf("blocks disjoint: %s; at", distinct ? "yes" : "NO");
    for (int id = 0; id < 2; id++)
        for (int i = 0; i < PER_THREAD; i++) printf(" %p", (void *)blocks[id][i]);
    printf("\n");
    printf("counter=%ld\n", (long)counter);
    for (int id = 0; id < 2; id++)
        for (int i = 0; i < PER_THREAD; i++) free(blocks[id][i]);
    free(huge);
    free(max);
    free(over);
    return 0;
}
