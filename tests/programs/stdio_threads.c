/* stdio_threads.c - 3 threads write lines to stdout with printf / fputs /
 * puts / fwrite and to stderr with fprintf, with NO program-level lock
 * (stdio's internal per-FILE locks only).  stdout is made line buffered so
 * the interleaving of whole lines reflects thread timing.  argv[1] =
 * delay-loop width between lines. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 3
#define LINES 12

static int window = 20000;
static int arrived;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    char buf[64];
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < NTHREADS) delay(10);
    for (int l = 0; l < LINES; l++) {
        switch (l % 4) {
        case 0:
            printf("t%d line %d printf\n", id, l);
            break;
        case 1:
            snprintf(buf, sizeof buf, "t%d line %d fputs\n", id, l);
            fputs(buf, stdout);
            break;
        case 2:
            snprintf(buf, sizeof buf, "t%d line %d puts", id, l);
            puts(buf);
            break;
        default:
            snprintf(buf, sizeof buf, "t%d line %d fwrite\n", id, l);
            fwrite(buf, 1, strlen(buf), stdout);
            break;
        }
        if (l % 6 == 5) fprintf(stderr, "t%d stderr after line %d\n", id, l);
        delay(window);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    printf("done\n");
    return 0;
}
