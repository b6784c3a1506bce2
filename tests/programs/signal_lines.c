/* signal_lines.c - an asynchronous signal landing among lines of output: main forks a child
 * that exits after about 1 ms (SIGCHLD) while main writes 400 numbered lines to stdout, one
 * write() each, and prints the last line written before the handler ran. Replay must deliver
 * the recorded signal where the recording took it, after the same line, however many lines
 * precede it. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int line = -1;
static volatile sig_atomic_t seen = -2;

static void on_child(int sig)
{
    (void)sig;
    if (seen == -2) seen = line;
}

int main(void)
{
    signal(SIGCHLD, on_child);
    pid_t c = fork();
    if (c == 0) {
        struct timespec d = {0, 1000 * 1000};
        nanosleep(&d, NULL);
        _exit(0);
    }
    char b[32];
    for (int i = 0; i < 400; i++) {
        int n = snprintf(b, sizeof b, "line %d\n", i);
        if (write(1, b, (size_t)n) != n) return 2;
        line = i;
        struct timespec d = {0, 2000};
        nanosleep(&d, NULL);
    }
    int st;
    if (waitpid(c, &st, 0) != c) return 3;
    printf("SIGCHLD after line %d\n", (int)seen);
    return 0;
}
