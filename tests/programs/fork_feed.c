/* fork_feed.c - the recorded process writes into pipes its children read, as a shell's
 * `cmd <<EOF` or `printf ... | cmd` does: a child that execs `wc -c` on 400 KiB written with
 * write() (six pipe capacities), waited for by polling with WNOHANG; a forked child (no exec)
 * that sums the bytes it reads and exits with the sum; `popen("wc -l", "w")` fed 3000 lines
 * through stdio. The children's outputs go to stdout, their statuses are printed: a child that
 * read nothing prints 0 and exits with another status. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void put(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) exit(3);
        p += w;
        n -= (size_t)w;
    }
}

/* A child reading the pipe's read end as its stdin; main keeps the write end. */
static pid_t child_reading(int fd[2], void (*work)(void))
{
    if (pipe(fd) != 0) exit(2);
    pid_t c = fork();
    if (c == 0) {
        close(fd[1]);
        dup2(fd[0], 0);
        close(fd[0]);
        work();
        _exit(127);
    }
    close(fd[0]);
    return c;
}

static void wc_bytes(void)
{
    execlp("wc", "wc", "-c", (char *)0);
}

static void summer(void)
{
    char b[1000];
    ssize_t n;
    unsigned sum = 0;
    while ((n = read(0, b, sizeof b)) > 0)
        for (ssize_t i = 0; i < n; i++) sum += (unsigned char)b[i];
    _exit((int)(sum % 251));
}

int main(void)
{
    int fd[2], st;
    static char b[4096];

    pid_t c = child_reading(fd, wc_bytes);
    for (int k = 0; k < 100; k++) {
        memset(b, 'a' + k % 26, sizeof b);
        put(fd[1], b, sizeof b);
    }
    close(fd[1]);
    struct timespec d = {0, 100 * 1000};
    pid_t w;
    while ((w = waitpid(c, &st, WNOHANG)) == 0) nanosleep(&d, NULL);
    fflush(stdout);
    printf("wc: status %d, %s\n", st, w == c ? "its pid" : "another pid");
    fflush(stdout);

    c = child_reading(fd, summer);
    for (int k = 0; k < 20; k++) {
        memset(b, 'A' + k, sizeof b);
        put(fd[1], b, 1000 + 100 * (size_t)k);
    }
    close(fd[1]);
    w = waitpid(c, &st, 0);
    printf("summer: exit %d, %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, w == c ? "its pid" : "another pid");
    fflush(stdout);

    FILE *p = popen("wc -l", "w");
    if (!p) return 4;
    for (int i = 1; i <= 3000; i++) fprintf(p, "line %d\n", i);
    printf("popen: status %d\n", pclose(p));
    return 0;
}
