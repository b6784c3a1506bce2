/* cond_alarm.c - a periodic SIGALRM (setitimer, every 500 us, blocked in the worker from
 * its start, so it lands on main) while main and a worker hand a turn back and forth 2000 times with a
 * mutex, pthread_cond_wait and pthread_cond_signal. The handler sets a volatile flag; main
 * checks it inside its critical section and logs the iterations at which it found it set.
 * Prints how many times it found the flag and the first 64 iterations (racy: where the
 * signals land). Replay must deliver each signal at the same runtime entry: a condition
 * signal is one, in replay as in record. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

#define ROUNDS 2000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int turn, hits;
static volatile sig_atomic_t flag;
static int seen[64], nseen;

static void on_alarm(int s)
{
    (void)s;
    flag = 1;
}

static void *other(void *a)
{
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        while (turn != 1) pthread_cond_wait(&c, &m);
        turn = 0;
        pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
    }
    return a;
}

int main(void)
{
    /* The worker starts with SIGALRM blocked (it inherits the mask), so every signal lands
     * on main, whose handler and reads of the flag are then one thread's. */
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, 0);
    signal(SIGALRM, on_alarm);
    struct itimerval it = {{0, 500}, {0, 500}};
    setitimer(ITIMER_REAL, &it, 0);
    pthread_t t;
    pthread_create(&t, 0, other, 0);
    pthread_sigmask(SIG_UNBLOCK, &alrm, 0);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        while (turn != 0) pthread_cond_wait(&c, &m);
        turn = 1;
        if (flag) {
            flag = 0;
            hits++;
            if (nseen < 64) seen[nseen++] = i;
        }
        pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
    }
    pthread_join(t, 0);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, 0);
    printf("hits %d:", hits);
    for (int i = 0; i < nseen; i++) printf(" %d", seen[i]);
    printf("\n");
    return 0;
}
