/* void_result.c - a function declared void, called through a pointer to a function returning
 * a pointer, whose "result" the caller stores and another thread reads (x264's thread pool:
 * `job->ret = job->func(job->arg)` for a void `read_frame_thread_int`). That value is whatever
 * the function's last call left in %rax: built with `reprise cc`, the callback of its last
 * store. Undefined behaviour in C, and common in real code. The workers also race on `sums`
 * (so its granule changes owner back and forth); only deterministic values are printed. */
#include <pthread.h>
#include <stdio.h>

struct job {
    void *(*func)(void *);
    void *arg;
    void *ret;
};

static long sums[2];
static pthread_barrier_t start;

__attribute__((noinline)) static void add(void *arg)
{
    long i = (long)arg;
    sums[i & 1] += i;
}

static void *worker(void *p)
{
    struct job *j = p;
    pthread_barrier_wait(&start);
    for (long i = 0; i < 200; i++) {
        j->arg = (void *)i;
        j->ret = j->func(j->arg);
    }
    return NULL;
}

int main(void)
{
    struct job jobs[2];
    pthread_t t[2];
    pthread_barrier_init(&start, NULL, 2);
    for (int k = 0; k < 2; k++) {
        jobs[k].func = (void *(*)(void *))add;
        jobs[k].ret = NULL;
        pthread_create(&t[k], NULL, worker, &jobs[k]);
    }
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    /* Read the kept "results" (not printed: their value depends on the build), and the sums
     * (not printed either: lost updates make them vary). */
    volatile unsigned long h = 0;
    for (int k = 0; k < 2; k++) h = h * 31 + (unsigned long)jobs[k].ret;
    h = h + (unsigned long)sums[0] + (unsigned long)sums[1];
    printf("jobs done\n");
    return 0;
}
