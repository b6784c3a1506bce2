/* addresses.c - prints per-thread addresses: a malloc'ed block, a stack
 * variable, a __thread (TLS) variable, and pthread_self().  Each thread
 * stores into its own slot; main prints after joining, in thread index
 * order.  No data races; the output depends only on address-space layout
 * (ASLR, allocator/thread-stack placement), which a replayer must
 * reproduce. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3

static __thread int tls_var;

struct slot {
    void *heap;
    void *stack;
    void *tls;
    pthread_t self;
    void *blocks[4]; /* kept live until main frees them */
};

static struct slot slots[NTHREADS];

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    volatile int stack_var = id;
    struct slot *s = &slots[id];
    s->heap = malloc(64 + 16 * (size_t)id);
    for (int i = 0; i < 4; i++) s->blocks[i] = malloc(32);
    tls_var = id + 1;
    s->stack = (void *)&stack_var;
    s->tls = (void *)&tls_var;
    s->self = pthread_self();
    return NULL;
}

int main(void)
{
    pthread_t th[NTHREADS];
    void *main_heap = malloc(64);
    int main_stack = 0;
    tls_var = 100;
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    printf("main: heap=%p stack=%p tls=%p self=%#lx\n", main_heap, (void *)&main_stack,
           (void *)&tls_var, (unsigned long)pthread_self());
    for (int i = 0; i < NTHREADS; i++) {
        printf("thread %d: heap=%p stack=%p tls=%p self=%#lx pthread_t_matches=%s\n", i,
               slots[i].heap, slots[i].stack, slots[i].tls, (unsigned long)slots[i].self,
               pthread_equal(slots[i].self, th[i]) ? "yes" : "no");
        printf("thread %d: blocks=%p %p %p %p\n", i, slots[i].blocks[0], slots[i].blocks[1],
               slots[i].blocks[2], slots[i].blocks[3]);
        free(slots[i].heap);
        for (int k = 0; k < 4; k++) free(slots[i].blocks[k]);
    }
    free(main_heap);
    return 0;
}
