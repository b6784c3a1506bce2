/* dcl.c - broken double-checked locking singleton.
 * get_instance() checks the instance pointer with a plain load outside the
 * lock.  The initialiser publishes the pointer before filling in the object
 * (as a compiler/CPU reordering could), so readers that take the fast path
 * may read a partially initialised object.  Init runs once (under the lock);
 * the checksum of the values readers saw varies with the interleaving.
 * argv[1] = race-window width (delay between publish and initialisation). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3
#define CALLS 40
#define NDATA 8

struct singleton {
    volatile int data[NDATA];
};

static struct singleton *volatile instance; /* plain pointer, no atomics */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int init_count;
static int window = 10000;
static pthread_barrier_t start;
static unsigned long sums[NTHREADS];
static int partial[NTHREADS];

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static struct singleton *get_instance(void)
{
    if (instance == NULL) {                /* first check, no lock */
        pthread_mutex_lock(&lock);
        if (instance == NULL) {            /* second check, locked */
            struct singleton *s = calloc(1, sizeof *s);
            init_count++;
            instance = s;                  /* BUG: publish before init */
            for (int i = 0; i < NDATA; i++) {
                delay(window);             /* race window */
                s->data[i] = (i + 1) * 11;
            }
        }
        pthread_mutex_unlock(&lock);
    }
    return instance;
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    unsigned long h = 0;
    pthread_barrier_wait(&start);
    delay(id * window * NDATA / 2); /* stagger arrivals */
    for (int c = 0; c < CALLS; c++) {
        struct singleton *s = get_instance();
        int zeros = 0;
        for (int i = 0; i < NDATA; i++) {
            h = h * 31 + (unsigned long)s->data[i];
            if (s->data[i] == 0) zeros++;
        }
        if (zeros) partial[id]++;
        delay(window / 4);
    }
    sums[id] = h;
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
    unsigned long checksum = 0;
    int npartial = 0;
    for (int i = 0; i < NTHREADS; i++) {
        checksum = checksum * 1000003UL ^ sums[i];
        npartial += partial[i];
    }
    printf("init_count=%d partial_reads=%d checksum=%lu\n", init_count, npartial,
           checksum);
    free((void *)instance);
    return 0;
}
