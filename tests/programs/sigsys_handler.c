/* sigsys_handler: the program handles SIGSYS itself. First as bash does for every fatal signal
 * once a script sets an EXIT trap: a handler that restores the default action and raises the
 * signal again. reprise catches system calls with Syscall User Dispatch, which raises SIGSYS at
 * each one: that handler must never see those (it killed every recorded bash script). A worker
 * thread writes lines meanwhile (system calls). Then a counting handler, replacing the first
 * (sigaction's old action must name the first), gets the two SIGSYS the program raises itself.
 * Prints the lines, whether the old action was the first handler, and the count. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t caught;

static void fatal(int s)
{
    signal(s, SIG_DFL);
    raise(s);
}

static void count(int s)
{
    (void)s;
    caught++;
}

static void *worker(void *arg)
{
    long n = (long)arg;
    char buf[64];
    for (long i = 0; i < n; i++) {
        int k = snprintf(buf, sizeof buf, "worker line %ld (pid known: %d)\n", i, getpid() > 0);
        if (write(1, buf, (size_t)k) != k)
            return (void *)1;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20;
    signal(SIGSYS, fatal);
    pthread_t t;
    void *res;
    if (pthread_create(&t, NULL, worker, (void *)n) != 0)
        return 2;
    pthread_join(t, &res);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = count;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSYS, &sa, &old);
    printf("old action was the first handler: %d\n", old.sa_handler == fatal);
    raise(SIGSYS);
    raise(SIGSYS);
    printf("caught %d, worker %s\n", (int)caught, res ? "failed" : "ok");
    return 0;
}
