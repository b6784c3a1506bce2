/* padded_heap_copy.c - two workers take turns on a shared counter under a mutex and a
 * condition variable; in each turn a worker builds a record by value in a helper (a
 * temporary in the helper's frame, every field set but not the padding after `live` and after
 * `eof`), stores it into a heap block, and copies that block whole into a second heap block.
 * The helper runs right after the worker's access to the counter the other worker wrote last
 * (under the mutex, as lbzip2's workers run their tasks). Prints a sum over the fields. Deterministic output. Not in the manifest:
 * tests/verification.rs builds it with `reprise cc -O2`, where each copy of the 48-byte
 * record is one ranged read (`__tsan_read_range`).
 *
 * What it exercises: the temporary lies where the runtime's frames of the worker's own
 * synchronisation calls and access callbacks were, so its padding holds bytes those frames
 * left, which differ between record and replay (a turn taken vs. a turn waited for, a fast
 * vs. a slow callback); the store carries them into the heap, and the heap-to-heap copy reads
 * them. The copy's digest must not depend on them (lbzip2 2.5 decompressing with two workers
 * copies its bit-stream positions so, and most of its replays diverged). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct pos {
    unsigned long major, minor;
    unsigned long offset;
    unsigned live; /* 4 bytes of padding follow */
    unsigned long buff;
    _Bool eof; /* 7 bytes of padding follow */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long turn, counter;
static unsigned long sums[2];

#define ROUNDS 200

__attribute__((noinline)) static struct pos make(unsigned long i, unsigned long c)
{
    struct pos p;
    p.major = i;
    p.minor = c;
    p.offset = i * 3 + c;
    p.live = (unsigned)(i & 31);
    p.buff = c * 7;
    p.eof = (i & 1) != 0;
    return p;
}

__attribute__((noinline)) static unsigned long step(struct pos *a, struct pos *b, unsigned long i,
                                                    unsigned long c)
{
    struct pos t = make(i, c);
    *a = t;
    *b = *a;
    return b->major + b->minor + b->offset + b->live + b->buff + b->eof;
}

/* Calls step() `depth` frames below the worker's own. */
__attribute__((noinline)) static unsigned long at_depth(int depth, struct pos *a, struct pos *b,
                                                        unsigned long i, unsigned long c)
{
    if (depth > 0) {
        volatile char gap[24];
        gap[0] = 1;
        unsigned long r = at_depth(depth - 1, a, b, i, c);
        (void)gap[0];
        return r;
    }
    return step(a, b, i, c);
}

static int depth;

static void *worker(void *arg)
{
    unsigned long me = (unsigned long)arg, s = 0, c;
    struct pos *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    for (unsigned long i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&mu);
        while (turn % 2 != me)
            pthread_cond_wait(&cv, &mu);
        c = ++counter;
        s += at_depth(depth, a, b, i, c);
        turn++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    sums[me] = s;
    free(a);
    free(b);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[2];
    depth = argc > 1 ? atoi(argv[1]) : 0;
    for (unsigned long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("sum=%lu\n", sums[0] + sums[1]);
    return 0;
}
