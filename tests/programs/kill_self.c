/* kill_self: the main thread saves its pid, blocks SIGUSR2 and SIGUSR1, starts a coordinator
 * thread and waits in sigsuspend (both unblocked) until a handler says the work is done; the
 * coordinator starts two workers that add to a shared total under a mutex, joins them and wakes main with kill(saved pid, SIGUSR2), as a program that
 * reports its completion by a signal to itself does. Main then joins the coordinator and
 * prints the total and the signal it got. Deterministic output. Like lbzip2, it installs its
 * handlers with a `struct sigaction` set field by field (sa_restorer and the padding keep
 * whatever the stack held), and after the wait resets SIGUSR2 to its default action and
 * unblocks it.
 *
 * What it exercises: in replay the program's getpid() gives the recording's pid, not the
 * replay's; a kill of that pid must reach the program itself (it once went to the recorded
 * pid: ESRCH, and main waited in sigsuspend for good); in replay the program's own SIGUSR2 is
 * the recorded delivery, and no real one may stay pending to kill the process once the default
 * action is back (it did). The runtime's copy of the program's `struct sigaction` is not the
 * program's access (it was: its uninitialised bytes, left on the stack by the runtime's own
 * frames, differ between record and replay, and lbzip2's replays diverged there). */
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

static void set_handler(int sig, void (*h)(int))
{
    struct sigaction act;
    act.sa_handler = h;
    sigemptyset(&act.sa_mask);
    act.sa_flags = 0;
    if (sigaction(sig, &act, NULL) != 0) abort();
}

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
    sigset_t block, saved;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &block, &saved);
    set_handler(SIGUSR1, on_signal);
    set_handler(SIGUSR2, on_signal);
    pthread_t c;
    pthread_create(&c, NULL, coordinator, NULL);
    while (!got) sigsuspend(&saved);
    pthread_join(c, NULL);
    set_handler(SIGUSR1, SIG_DFL);
    set_handler(SIGUSR2, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &block, NULL);
    printf("signal=%s total=%ld\n", got == SIGUSR2 ? "SIGUSR2" : "other", total);
    return 0;
}
