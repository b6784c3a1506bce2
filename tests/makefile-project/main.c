/* main.c - makefile-project test program: 3 threads add keys to a
 * mutex-protected shared table (table.c) and bump a racy counter
 * (counter.c); argv[1] = race-window width.  Prints the table (counts are
 * deterministic, the thread that first inserted each key varies), the
 * table total (invariant) and the racy counter (lost updates vary). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "work.h"

#define NTHREADS 3
#define ITERS 300

static int arrived;

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < NTHREADS)
        __asm__ volatile("" ::: "memory");
    for (int k = 0; k < ITERS; k++) {
        table_add((k * 7 + id * 3) % 12, id);
        counter_bump();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) counter_set_window(atoi(argv[1]));
    table_init();
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    char buf[512];
    table_dump(buf, sizeof buf);
    printf("table: %s\n", buf);
    printf("table total=%ld (expected %d)\n", table_total(), NTHREADS * ITERS);
    printf("racy counter=%d (expected %d)\n", counter_value(), NTHREADS * ITERS);
    table_destroy();
    return 0;
}
