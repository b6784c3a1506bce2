/* futex_deadlock.c - a thread waits on a private futex nobody ever wakes (as an atomic wait
 * of the program's own would, with its waker gone), and main joins it: a deadlock the
 * runtime sees only if it knows the futex wait blocks. Nothing ends it but the recorder's
 * deadlock detection (or a signal). */
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static int word;

static void *waiter(void *arg)
{
    long r;
    do
        r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    while (word == 0);
    printf("unreachable: woken (%ld)\n", r);
    return arg;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    puts("waiting");
    fflush(stdout);
    pthread_join(t, NULL);
    puts("unreachable: joined");
    return 0;
}
