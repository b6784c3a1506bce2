/* pin_threads.c - each worker pins itself to one of the CPUs it may run on, by the thread id
 * gettid gives it (sched_setaffinity, as fio's clock test does) and by its pthread_t
 * (pthread_setaffinity_np), then checks where it may run. Prints each worker's results. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#define NTHREADS 2

static int cpus[CPU_SETSIZE], ncpus;
static int result[NTHREADS][3];

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[id % ncpus], &set);
    result[id][0] = sched_setaffinity(gettid(), sizeof set, &set);
    result[id][1] = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    cpu_set_t now;
    result[id][2] = sched_getaffinity(0, sizeof now, &now) == 0 && CPU_COUNT(&now) == 1;
    return NULL;
}

int main(void)
{
    cpu_set_t all;
    sched_getaffinity(0, sizeof all, &all);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) cpus[ncpus++] = c;
    pthread_t t[NTHREADS];
    for (long i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        printf("worker %d: by tid %d, by pthread %d, pinned %d\n", i, result[i][0], result[i][1],
               result[i][2]);
    }
    return 0;
}
