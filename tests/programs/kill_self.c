/* kill_self: the main thread saves its pid, blocks SIGUSR2 and SIGUSR1, starts a coordinator
 * thread and waits in sigsuspend (both unblocked) until a handler says the work is done; the
 * coordinator starts two workers that add to a shared total under a mutex, joins them and wakes main with kill(saved pid, SIGUSR2), as a program that
 * reports its completion by a signal to itself does. Main then joins the coordinator and
 * prints the total and the signal it got. Deterministic output.
 *
 * What it exercises: in replay the program's getpid() gives the recording's pid, not the
 * replay's; a kill of that pid must reach the program itself (it once went to the recorded
 * pid: ESRCH, and main waited in sigsuspend for good). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pid_t pid;
static volatile sig_atomic_t got;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void on_signal(int sig) { got = sig; }

static void *worker(void *arg)
{
    long k = (long)arg;
    for (long i = 0; i < 20000; i++) {
        pthread_mutex_lock(&mu);
        total += k;
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static void *coordinator(void *arg)
{
    (void)arg;
    pthread_t w[2];
    for (long i = 0; i < 2; i++) pthread_create(&w[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < 2; i++) pthread_join(w[i], NULL);
    if (kill(pid, SIGUSR2) != 0) {
        perror("kill");
        abort();
    }
    return NULL;
}

int main(void)
{
    pid = getpid();
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sigset_t block, saved;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &block, &saved);
    pthread_t c;
    pthread_create(&c, NULL, coordinator, NULL);
    while (!got) sigsuspend(&saved);
    pthread_join(c, NULL);
    printf("signal=%s total=%ld\n", got == SIGUSR2 ? "SIGUSR2" : "other", total);
    return 0;
}
