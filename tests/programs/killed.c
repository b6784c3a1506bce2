/* killed.c - two threads bump a mutex-protected counter (sleeping 100 us between bumps)
 * while main prints the counter every 10 ms. With argv[1] = "self", main kills its own
 * process with SIGKILL after 30 rounds; with "exit", it calls _exit(3) there (an end the
 * runtime sees); with "exec", it execs /bin/sh -c 'exit 5' there (one it does not see);
 * otherwise it runs until killed from outside (at most 60 s). Used by
 * crates/reprise-cli/tests/cut_short.rs: a recording cut short by SIGKILL or exec. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *bump(void *arg)
{
    for (int i = 0; i < 600000; i++) {
        pthread_mutex_lock(&mu);
        counter++;
        pthread_mutex_unlock(&mu);
        usleep(100);
    }
    return arg;
}

int main(int argc, char **argv)
{
    int self = argc > 1 && strcmp(argv[1], "self") == 0;
    int quit = argc > 1 && strcmp(argv[1], "exit") == 0;
    int replace = argc > 1 && strcmp(argv[1], "exec") == 0;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, bump, NULL);
    for (int r = 0; r < 6000; r++) {
        usleep(10000);
        pthread_mutex_lock(&mu);
        printf("round %d counter %ld\n", r, counter);
        pthread_mutex_unlock(&mu);
        fflush(stdout);
        if (self && r == 29) kill(getpid(), SIGKILL);
        if (quit && r == 29) _exit(3);
        if (replace && r == 29) execl("/bin/sh", "sh", "-c", "exit 5", (char *)NULL);
    }
    return 0;
}
