/* A process pool as Python's multiprocessing.Pool builds it: main makes a task pipe and a result
 * pipe, forks two workers, and keeps both ends of the task pipe open (it never reads it); the
 * workers read 8-byte tasks from it, square them and write 16-byte results into the result
 * pipe, until a task of -1. Main writes 2000 tasks and two ends, reads 2000 results, waits for
 * the workers and prints the sum and their statuses. Output and status are the same in every
 * run (which worker takes which task is timing). */
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define TASKS 2000

static int read_all(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, (const char *)p + done, n - done);
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return 0;
}

int main(void)
{
    int tasks[2], results[2];
    if (pipe(tasks) != 0 || pipe(results) != 0) return 1;
    pid_t w[2];
    for (int k = 0; k < 2; k++) {
        w[k] = fork();
        if (w[k] == 0) {
            close(results[0]);
            int64_t t;
            /* A task is 8 bytes, below PIPE_BUF: each read takes whole tasks. */
            while (read_all(tasks[0], &t, sizeof t) == 0 && t >= 0) {
                int64_t r[2] = { t, t * t };
                if (write_all(results[1], r, sizeof r) != 0) _exit(2);
            }
            _exit(0);
        }
    }
    close(results[1]);
    int64_t t;
    for (t = 0; t < TASKS; t++)
        if (write_all(tasks[1], &t, sizeof t) != 0) return 1;
    long long sum = 0, ids = 0;
    for (int i = 0; i < TASKS; i++) {
        int64_t r[2];
        if (read_all(results[0], r, sizeof r) != 0) return 1;
        ids += r[0];
        sum += r[1];
    }
    t = -1;
    write_all(tasks[1], &t, sizeof t);
    write_all(tasks[1], &t, sizeof t);
    int st[2];
    for (int k = 0; k < 2; k++) waitpid(w[k], &st[k], 0);
    printf("results %d, tasks summed %lld, squares summed %lld, workers exited %d %d\n", TASKS, ids, sum,
           WEXITSTATUS(st[0]), WEXITSTATUS(st[1]));
    return 0;
}
