/* fork_system.c - a thread counts under a mutex while main forks a child that exits with a
 * status and calls system(); the child processes run unrecorded (only this process is
 * recorded) and must not be harmed by the runtime (inherited rdtsc trap, descriptors). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static int counter;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *work(void *a) { (void)a; for (int i = 0; i < 1000; i++) { pthread_mutex_lock(&mu); counter++; pthread_mutex_unlock(&mu); } return NULL; }
int main(void) {
    pthread_t t; pthread_create(&t, NULL, work, NULL);
    pid_t p = fork();
    if (p == 0) { for (int i = 0; i < 100; i++) counter++; _exit(counter > 0 ? 3 : 4); }
    int st; waitpid(p, &st, 0);
    pthread_join(t, NULL);
    int r = system("echo from-system");
    printf("child=%d counter=%d system=%d\n", WEXITSTATUS(st), counter, r);
    return 0;
}
