/* exit_after_create.c - main creates four threads and returns at once, without joining
 * them: each thread may be anywhere when the process ends (not yet started, starting, or
 * in the middle of its work), and a recording of any of these ends must replay. */
#include <pthread.h>
#include <stdio.h>

static long cells[4][64];

static void *work(void *arg)
{
    long *c = arg;
    for (int k = 0; k < 1000; k++)
        c[k % 64] += k;
    return NULL;
}

int main(void)
{
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, work, cells[i]);
    puts("created");
    return 0;
}
