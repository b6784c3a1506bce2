/* A child's SIGCHLD arrives during the parent's read of the child's pipe, the way bash's
 * `x=$(seq 1 100000)` gets it: the child writes 128 KiB (two pipe capacities) and exits while
 * the parent's read of the first 64 KiB returns; the parent's SIGCHLD handler reaps it with
 * `waitpid(WNOHANG)`. To make that order (rather than hope for it), parent and child share one
 * CPU and the parent runs SCHED_IDLE while it reads: the child, woken by the read, preempts it
 * inside the read, writes the rest and exits before the read returns. The parent then reads to
 * the end and prints the bytes and the child's status: the same in every run. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HALF (64 * 1024)

static volatile sig_atomic_t reaped_status = -1;

static void on_chld(int sig)
{
    (void)sig;
    int st;
    if (waitpid(-1, &st, WNOHANG) > 0) reaped_status = st;
}

int main(void)
{
    cpu_set_t all, one;
    CPU_ZERO(&one);
    if (sched_getaffinity(0, sizeof all, &all) == 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
            if (CPU_ISSET(cpu, &all)) {
                CPU_SET(cpu, &one);
                break;
            }
        }
        sched_setaffinity(0, sizeof one, &one);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCHLD, &sa, NULL);
    int p[2];
    if (pipe(p) != 0) return 1;
    pid_t c = fork();
    if (c == 0) {
        close(p[0]);
        static char out[2 * HALF];
        for (int i = 0; i < 2 * HALF; i++) out[i] = (char)('a' + i % 26);
        /* Let the parent block in its read first. */
        usleep(20000);
        size_t done = 0;
        while (done < sizeof out) {
            ssize_t w = write(p[1], out + done, sizeof out - done);
            if (w <= 0) _exit(2);
            done += (size_t)w;
        }
        _exit(0);
    }
    close(p[1]);
    struct sched_param none = {0};
    sched_setscheduler(0, SCHED_IDLE, &none);
    static char in[HALF];
    long total = 0, sum = 0;
    for (;;) {
        ssize_t r = read(p[0], in, sizeof in);
        if (r <= 0) break;
        for (ssize_t i = 0; i < r; i++) sum += in[i];
        total += r;
    }
    sched_setscheduler(0, SCHED_OTHER, &none);
    if (reaped_status == -1) {
        int st;
        if (waitpid(c, &st, 0) == c) reaped_status = st;
    }
    printf("read %ld bytes (sum %ld); child exited %d\n", total, sum,
           WIFEXITED(reaped_status) ? WEXITSTATUS(reaped_status) : -1);
    return 0;
}
