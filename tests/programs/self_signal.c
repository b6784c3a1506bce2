/* A worker wakes the main thread with a signal, as lbzip2 does: main blocks SIGUSR2, installs a
 * handler that sets a flag, reads a few bytes from a pipe (an input the trace keeps), starts
 * the worker with every signal blocked, and waits in `sigsuspend` until the flag is set; the
 * worker prints its results and ends with `kill(getpid(), SIGUSR2)`. Main then prints and
 * exits without joining the worker, so the worker's output must come before the signal's
 * delivery in a replay too. Output and status are the same in every run. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t woken;

static void on_usr2(int sig)
{
    woken = sig;
}

static void *worker(void *arg)
{
    long rounds = (long)arg;
    for (long r = 0; r < rounds; r++) {
        unsigned long s = 0;
        for (long i = 0; i < 200000; i++)
            s += (unsigned long)(i * (r + 1)) % 7;
        printf("round %ld sum %lu\n", r, s);
    }
    fflush(stdout);
    kill(getpid(), SIGUSR2);
    return NULL;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 8;
    sigset_t usr2, old, all, keep;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    sigprocmask(SIG_BLOCK, &usr2, &old);
    struct sigaction sa = {0};
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);

    int p[2];
    char magic[5] = {0};
    if (pipe(p) != 0 || write(p[1], "BZh9", 4) != 4 || read(p[0], magic, 4) != 4)
        return 1;
    printf("magic %s\n", magic);
    fflush(stdout);

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &keep);
    pthread_t t;
    pthread_create(&t, NULL, worker, (void *)rounds);
    pthread_sigmask(SIG_SETMASK, &keep, NULL);
    while (!woken)
        sigsuspend(&old);
    printf("main woken by signal %d\n", (int)woken);
    fflush(stdout);
    _exit(0);
}
