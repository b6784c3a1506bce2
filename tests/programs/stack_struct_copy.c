/* stack_struct_copy.c - a 256-byte local struct, only some of its fields set, copied whole
 * into the heap with memcpy, directly and through a function pointer (as x264 copies its
 * motion-estimation candidates), by two threads with instrumented work in between. The bytes
 * never set hold whatever earlier frames left on the stack. Prints the sum of the set fields
 * each thread saw in its heap copy. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int pixel;
    uint16_t *cost_mv;
    int ref_cost, ref;
    const void *weight;
    uint8_t *fref[12];
    uint8_t *fenc[3];
    int stride[3];
    int16_t mvp[2];
    int cost_mv_sum, cost;
    int16_t mv[2];
} __attribute__((aligned(64))) cand_t;

static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;
static volatile int scratch[2][997];

__attribute__((noinline)) static void work(int id, int k)
{
    for (int i = 0; i < 300 + k % 7; i++) scratch[id][(i * 31 + k) % 997] += i;
}

__attribute__((noinline)) static void analyse(cand_t *best, int k, int direct)
{
    cand_t m; /* not initialised */
    m.pixel = k & 7;
    m.ref = 0;
    m.cost = k * 3;
    m.mv[0] = (int16_t)k;
    m.mv[1] = (int16_t)-k;
    if (m.cost >= best->cost || k % 5 == 0) {
        if (direct)
            memcpy(best, &m, sizeof m);
        else
            copy_fn(best, &m, sizeof m);
    }
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    cand_t *best = aligned_alloc(64, sizeof(cand_t));
    memset(best, 0, sizeof *best);
    long s = 0;
    for (int k = 0; k < 4000; k++) {
        work(id, k);
        analyse(best, k, id == 0);
        s += best->cost + best->mv[0] + best->pixel;
    }
    free(best);
    return (void *)s;
}

int main(void)
{
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        printf("thread %d: %ld\n", i, (long)r);
    }
    return 0;
}
