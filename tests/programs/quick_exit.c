/* quick_exit.c - the process ends from a worker thread without exit(): three workers take
 * turns on a mutex-protected log; the first to append its 200th entry writes the log's order
 * (which varies with the interleaving) straight to stdout and ends the process at once, with
 * _exit(3) or, when that thread is worker 1, with a raw exit_group(4) system call, while the
 * others are still running and main waits in pthread_join. Neither runs atexit handlers. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static char order[1024];
static int len;
static int count[3];

static void *work(void *arg)
{
    int id = (int)(long)arg;
    pthread_barrier_wait(&start);
    for (;;) {
        pthread_mutex_lock(&mu);
        if (len < (int)sizeof order - 1)
            order[len++] = (char)('a' + id);
        if (++count[id] == 200) {
            unsigned h = 2166136261u;
            for (int i = 0; i < len; i++)
                h = (h ^ (unsigned char)order[i]) * 16777619u;
            char line[128];
            int n = snprintf(line, sizeof line, "worker %d ends the process after %d entries, order hash %08x\n",
                             id, len, h);
            if (write(1, line, (size_t)n) != n)
                return NULL;
            if (id == 1)
                syscall(SYS_exit_group, 4);
            _exit(3);
        }
        pthread_mutex_unlock(&mu);
        for (volatile int k = 0; k < 50; k++)
            ;
    }
}

int main(void)
{
    pthread_t th[3];
    pthread_barrier_init(&start, NULL, 3);
    for (long i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, work, (void *)i);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    puts("not reached");
    return 0;
}
