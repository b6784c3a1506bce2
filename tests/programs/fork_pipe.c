/* fork_pipe.c - children of fork() write into pipes the recorded process reads, as a shell's
 * `x=$(cmd)` does: a child that writes late (the parent reads, closes the pipe, waits), a child
 * that writes 256 KiB (four times a pipe's capacity, read with read()), and one whose lines
 * are read through stdio and which is waited for by polling with WNOHANG. Each child's status
 * is printed: one that died of SIGPIPE (its pipe closed before it wrote) shows as 13. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t child_writing(int fd[2], void (*work)(int))
{
    if (pipe(fd) != 0) exit(2);
    pid_t c = fork();
    if (c == 0) {
        close(fd[0]);
        work(fd[1]);
        _exit(0);
    }
    close(fd[1]);
    return c;
}

static void put(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) _exit(3);
        p += w;
        n -= (size_t)w;
    }
}

static void late(int fd)
{
    struct timespec d = {0, 20 * 1000 * 1000};
    nanosleep(&d, NULL);
    put(fd, "late\n", 5);
}

static void bulk(int fd)
{
    static char b[4096];
    for (int k = 0; k < 64; k++) {
        memset(b, 'a' + k % 26, sizeof b);
        put(fd, b, sizeof b);
    }
}

static void lines(int fd)
{
    char l[32];
    for (int i = 1; i <= 3000; i++) put(fd, l, (size_t)snprintf(l, sizeof l, "%d\n", i));
}

int main(void)
{
    int fd[2], st;
    char buf[64] = {0};

    pid_t c = child_writing(fd, late);
    ssize_t n = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    waitpid(c, &st, 0);
    printf("late: %zd bytes, %s", n, n > 0 ? buf : "(none)\n");
    printf("late: status %d\n", st);

    c = child_writing(fd, bulk);
    long total = 0, sum = 0;
    char big[1000];
    while ((n = read(fd[0], big, sizeof big)) > 0) {
        total += n;
        for (ssize_t i = 0; i < n; i++) sum += big[i];
    }
    close(fd[0]);
    pid_t w = waitpid(c, &st, 0);
    printf("bulk: %ld bytes, sum %ld, status %d, %s\n", total, sum, st, w == c ? "its pid" : "another pid");

    c = child_writing(fd, lines);
    FILE *f = fdopen(fd[0], "r");
    long count = 0, lsum = 0;
    while (fgets(buf, sizeof buf, f)) {
        count++;
        lsum += atol(buf);
    }
    fclose(f);
    struct timespec d = {0, 100 * 1000};
    while ((w = waitpid(-1, &st, WNOHANG)) == 0) nanosleep(&d, NULL);
    printf("lines: %ld, sum %ld, status %d, %s\n", count, lsum, st, w == c ? "its pid" : "another pid");
    return 0;
}
