/* kill_self: the main thread saves its pid and thread id, blocks SIGUSR1, SIGUSR2 and
 * SIGWINCH, starts a coordinator thread and waits in sigsuspend (all unblocked) until its
 * handlers have seen the three; the coordinator starts two workers that add to a shared total
 * under a mutex, joins them and signals main with tgkill(saved pid, saved tid, SIGUSR1),
 * sigqueue(saved pid, SIGWINCH) and kill(saved pid, SIGUSR2), as a program that reports its
 * completion by a signal to itself does. Main then joins the coordinator and prints the total
 * and the signals it got. Deterministic output. Like lbzip2, it installs its
 * handlers with a `struct sigaction` set field by field (sa_restorer and the padding keep
 * whatever the stack held), and after the wait resets SIGUSR2 to its default action and
 * unblocks it.
 *
 * What it exercises: in replay the program's getpid() gives the recording's pid, not the
 * replay's, and gettid() the recording's thread id; a kill, tgkill or sigqueue of them must reach
 * the program itself (they once went to the recorded ids: ESRCH, and main waited in sigsuspend
 * for good); in replay the program's own SIGUSR2 is
 * the recorded delivery, and no real one may stay pending to kill the process once the default
 * action is back (it did). The runtime's copy of the program's `struct sigaction` is not the
 * program's access (it was: its uninitialised bytes, left on the stack by the runtime's own
 * frames, differ between record and replay, and lbzip2's replays diverged there). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pid_t pid, tid;
static volatile sig_atomic_t got;
#define ALL 7
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void on_signal(int sig)
{
    got |= sig == SIGUSR1 ? 1 : sig == SIGWINCH ? 2 : 4;
}

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
    if (tgkill(pid, tid, SIGUSR1) != 0) {
        perror("tgkill");
        abort();
    }
    if (sigqueue(pid, SIGWINCH, (union sigval){.sival_int = 7}) != 0) {
        perror("sigqueue");
        abort();
    }
    if (kill(pid, SIGUSR2) != 0) {
        perror("kill");
        abort();
    }
    return NULL;
}

int main(void)
{
    pid = getpid();
    tid = gettid();
    sigset_t block, saved;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGWINCH);
    pthread_sigmask(SIG_BLOCK, &block, &saved);
    set_handler(SIGUSR1, on_signal);
    set_handler(SIGUSR2, on_signal);
    set_handler(SIGWINCH, on_signal);
    pthread_t c;
    pthread_create(&c, NULL, coordinator, NULL);
    while (got != ALL) sigsuspend(&saved);
    pthread_join(c, NULL);
    set_handler(SIGUSR1, SIG_DFL);
    set_handler(SIGUSR2, SIG_DFL);
    set_handler(SIGWINCH, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &block, NULL);
    printf("signals=%s total=%ld\n", got == ALL ? "SIGUSR1,SIGWINCH,SIGUSR2" : "other", total);
    return 0;
}
