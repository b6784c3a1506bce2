/* child_pids.c - a program that keeps its children's pids in memory, as most do (a global
 * array here; every local at -O0): a child made a process group leader (setpgid, getpgid)
 * and killed with SIGTERM through its group (killpg), another probed with kill(pid, 0), one
 * reaped by waitpid on its saved pid, one polled with waitid(WNOHANG | WNOWAIT) and then
 * reaped by waitid, each result compared with the saved pid. Full mode digests the values the
 * program reads, so replay must give it the pids it had while recording. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t kids[3];

static void nap(long ns)
{
    struct timespec d = {0, ns};
    nanosleep(&d, NULL);
}

int main(void)
{
    for (int i = 0; i < 3; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            if (i == 0) for (;;) pause();
            nap(2000000L * i);
            _exit(10 + i);
        }
    }
    int st;
    /* Job control through the saved pids: the first child leads a group of its own, and is
     * killed through it. */
    if (setpgid(kids[0], kids[0]) != 0) return 5;
    printf("group: %s, probe: %d\n", getpgid(kids[0]) == kids[0] ? "its own" : "another", kill(kids[1], 0));
    if (killpg(kids[0], SIGTERM) != 0) return 2;
    pid_t w = waitpid(kids[0], &st, 0);
    printf("killed: %s, signal %d\n", w == kids[0] ? "its pid" : "another pid", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    w = waitpid(kids[1], &st, 0);
    printf("waitpid: %s, exit %d\n", w == kids[1] ? "its pid" : "another pid", WEXITSTATUS(st));
    siginfo_t si;
    int polls = 0;
    for (;;) {
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)kids[2], &si, WEXITED | WNOHANG | WNOWAIT) != 0) return 3;
        if (si.si_pid != 0) break;
        polls++;
        nap(100000);
    }
    printf("waitid peek: %s, exit %d\n", si.si_pid == kids[2] ? "its pid" : "another pid", si.si_status);
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED) != 0) return 4;
    printf("waitid: %s, exit %d, code %s\n", si.si_pid == kids[2] ? "its pid" : "another pid", si.si_status,
           si.si_code == CLD_EXITED ? "exited" : "other");
    printf("no more: %d\n", waitid(P_ALL, 0, &si, WEXITED));
    return 0;
}
