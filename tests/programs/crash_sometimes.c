/* crash_sometimes.c - crashes only on some interleavings.
 * A reader thread repeatedly does "check ptr != NULL; window; use ptr".
 * A closer thread, once the reader has made some progress (it waits on an
 * atomic progress counter) and after some fixed work, tears the object down in two
 * steps: it marks it dead (magic = DEAD), waits a little, then clears the
 * shared pointer.  If the teardown lands inside the reader's window the
 * reader either sees a dead object -> abort() (SIGABRT) or re-reads a NULL
 * pointer and dereferences it -> SIGSEGV.  Otherwise the reader notices the
 * NULL at its check, stops, and the program exits 0 printing a result.
 * argv[1] = race-window width (delay between check and use), default 2500;
 * argv[2] = reader work outside the window, default 4000.  The acceptance tests pass a
 * longer gap (40000, about 13 us): a recorder that hands a variable to the writer at the
 * reader's next instrumented access, or by a signal when the reader is slow to get there,
 * needs reader work outside the window longer than a signal's round trip for the teardown
 * to fall outside the window at all. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MAGIC 0x600DF00D
#define DEAD 0xDEADDEAD
#define MAX_ROUNDS 4000
#define START_ROUNDS 20    /* closer waits for this much reader progress */
#define POLL 7919          /* closer's progress poll interval */
#define CLOSE_AFTER 10000  /* closer's work before teardown */

struct object {
    volatile unsigned magic;
    volatile int value;
};

static struct object obj = {MAGIC, 7};
static struct object *volatile shared = &obj;
static int window = 2500;
static int gap = 4000;         /* reader work outside the window */
static atomic_int progress;
static pthread_barrier_t start;
static long reader_sum;
static int reader_rounds;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *reader(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    int r;
    for (r = 0; r < MAX_ROUNDS; r++) {
        if (shared == NULL) break;            /* check */
        delay(window);                        /* race window */
        struct object *p = shared;            /* re-read: may now be NULL */
        if (p->magic != MAGIC) abort();       /* SIGSEGV if p == NULL */
        reader_sum += p->value;               /* use */
        atomic_fetch_add(&progress, 1);
        delay(gap);
    }
    reader_rounds = r;
    return NULL;
}

static void *closer(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    /* Bounded: the reader keeps incrementing progress until shared is NULL.
     * The coarse poll interval (longer than one reader round) keeps the
     * teardown from phase-locking to the reader's loop. */
    while (atomic_load(&progress) < START_ROUNDS) delay(POLL);
    delay(CLOSE_AFTER);
    obj.magic = DEAD;    /* step 1: mark dead */
    delay(window / 4);
    shared = NULL;       /* step 2: unpublish */
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    if (argc > 2) gap = atoi(argv[2]);
    pthread_t a, b;
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&a, NULL, reader, NULL);
    pthread_create(&b, NULL, closer, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&start);
    printf("survived: rounds=%d sum=%ld finished_all=%s\n", reader_rounds, reader_sum,
           reader_rounds == MAX_ROUNDS ? "yes" : "no");
    return 0;
}
