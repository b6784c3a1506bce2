/* long_run.c - prints "started" at once, then two threads add to a counter under a mutex
 * argv[1] times each (default 1000), and main prints the total. A run as long as the test
 * needs: `tests/interrupted.rs` stops its replay midway. Deterministic. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;
static long rounds = 1000;

static void *add(void *arg)
{
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        pthread_mutex_lock(&m);
        total += i % 3;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atol(argv[1]);
    printf("started\n");
    fflush(stdout);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, add, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("total %ld\n", total);
    return 0;
}
