/* Waits that swap in a signal mask, as GNU make's `-j` jobserver and event loops use them: a
 * token written into the program's own pipe, then `pselect`, `ppoll` and `epoll_pwait` on its
 * read end (ready at once), a `pselect` with a timeout on an empty pipe (none ready), and a
 * `pselect` with SIGCHLD blocked outside it and unblocked inside, ended by a child's exit
 * (EINTR after the handler ran), then the token read back. Output and status are the same in
 * every run. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t children_done;

static void on_chld(int sig)
{
    (void)sig;
    children_done++;
}

int main(void)
{
    int p[2], q[2];
    if (pipe(p) != 0 || pipe(q) != 0 || write(p[1], "+", 1) != 1) return 1;
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    sigset_t none;
    sigemptyset(&none);
    int r = pselect(p[0] + 1, &rd, NULL, NULL, NULL, &none);
    printf("pselect: %d ready, token's end %s\n", r, FD_ISSET(p[0], &rd) ? "set" : "clear");

    struct pollfd pf = { .fd = p[0], .events = POLLIN };
    r = ppoll(&pf, 1, NULL, &none);
    printf("ppoll: %d ready, revents %s\n", r, (pf.revents & POLLIN) ? "POLLIN" : "none");

    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 7 }, out;
    epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
    r = epoll_pwait(ep, &out, 1, -1, &none);
    printf("epoll_pwait: %d ready, data %u\n", r, r == 1 ? out.data.u32 : 0);

    struct timespec ten_ms = { 0, 10 * 1000 * 1000 };
    FD_ZERO(&rd);
    FD_SET(q[0], &rd);
    r = pselect(q[0] + 1, &rd, NULL, NULL, &ten_ms, &none);
    printf("pselect on an empty pipe: %d ready\n", r);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    pid_t c = fork();
    if (c == 0) {
        usleep(20000);
        _exit(3);
    }
    for (;;) {
        FD_ZERO(&rd);
        FD_SET(q[0], &rd);
        r = pselect(q[0] + 1, &rd, NULL, NULL, NULL, &none);
        if (r < 0 && errno == EINTR && children_done) break;
    }
    int st = 0;
    waitpid(c, &st, 0);
    sigprocmask(SIG_SETMASK, &old, NULL);
    printf("pselect ended by SIGCHLD: EINTR, handler ran %d, child exited %d\n", (int)children_done,
           WEXITSTATUS(st));
    char t = 0;
    ssize_t n = read(p[0], &t, 1);
    printf("token read back: %zd byte, %c\n", n, t);
    return 0;
}
