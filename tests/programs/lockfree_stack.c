/* lockfree_stack.c - Treiber stack with C11 atomics.
 * Nodes come from a preallocated pool (allocated with atomic fetch_add) and
 * are never reused, so there is no ABA problem.  Threads alternate pushes
 * and pops; the order in which values are popped (per-thread checksums)
 * depends on the interleaving, while the sum of all values is invariant.
 * argv[1] = window width (delay between reading top and the CAS). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3
#define PUSHES_PER_THREAD 400
#define POOL (NTHREADS * PUSHES_PER_THREAD)

struct node {
    struct node *next;
    int value;
};

static struct node pool[POOL];
static atomic_int pool_next;
static _Atomic(struct node *) top;
static atomic_int cas_failures;
static atomic_int total_pops;
static int window = 200;
static pthread_barrier_t start;

static unsigned long pop_hash[NTHREADS];
static long pop_sum[NTHREADS];
static int pop_count[NTHREADS];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void push(int value)
{
    struct node *n = &pool[atomic_fetch_add(&pool_next, 1)];
    n->value = value;
    struct node *old = atomic_load(&top);
    do {
        n->next = old;
        delay(window);
    } while (!atomic_compare_exchange_weak(&top, &old, n) &&
             (atomic_fetch_add(&cas_failures, 1), 1));
}

static struct node *pop(void)
{
    struct node *old = atomic_load(&top);
    while (old != NULL) {
        struct node *next = old->next;
        delay(window);
        if (atomic_compare_exchange_weak(&top, &old, next)) break;
        atomic_fetch_add(&cas_failures, 1);
    }
    if (old) atomic_fetch_add(&total_pops, 1);
    return old;
}

static void record(int id, struct node *n)
{
    pop_hash[id] = pop_hash[id] * 1000003UL + (unsigned long)n->value;
    pop_sum[id] += n->value;
    pop_count[id]++;
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < PUSHES_PER_THREAD; i++) {
        push(id * 10000 + i + 1);
        if (i % 3 != 2) { /* pop two out of every three pushes */
            struct node *n = pop();
            if (n) record(id, n);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t th[NTHREADS];
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    long sum = 0, left_sum = 0;
    int left = 0;
    unsigned long hash = 0;
    for (int i = 0; i < NTHREADS; i++) {
        printf("thread %d: pops=%d sum=%ld hash=%lu\n", i, pop_count[i], pop_sum[i],
               pop_hash[i]);
        sum += pop_sum[i];
        hash = hash * 31 + pop_hash[i];
    }
    struct node *n;
    unsigned long left_hash = 0;
    while ((n = atomic_load(&top)) != NULL) { /* single-threaded drain */
        atomic_store(&top, n->next);
        left++;
        left_sum += n->value;
        left_hash = left_hash * 1000003UL + (unsigned long)n->value;
    }
    long expect = 0;
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < PUSHES_PER_THREAD; i++) expect += t * 10000 + i + 1;
    printf("pushes=%d pops=%d left=%d left_hash=%lu pop_order_hash=%lu\n",
           atomic_load(&pool_next), atomic_load(&total_pops), left, left_hash, hash);
    printf("sum=%ld expected=%ld cas_failures=%d\n", sum + left_sum, expect,
           atomic_load(&cas_failures));
    return 0;
}
