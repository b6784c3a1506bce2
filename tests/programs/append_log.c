/* append_log.c - two threads append lines to a log file (argv[1], default
 * "reprise-test.log" in the cwd) opened with O_APPEND, each write() under a
 * mutex; then main reads the whole file back and prints its line count
 * before and after, and the order in which this run's lines landed
 * (thread ids of the appended lines; varies with timing).  The file is
 * left in place, so running again appends more.  A delay loop of fixed
 * width sits between each thread's writes. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NTHREADS 2
#define LINES 8

static const char *path = "reprise-test.log";
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;
static int arrived;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static long count_lines(char *last_ids, size_t tail)
{
    int rfd = open(path, O_RDONLY);
    if (rfd < 0) return 0;
    static char data[1 << 20];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof data && (n = read(rfd, data + len, sizeof data - len)) > 0) len += (size_t)n;
    close(rfd);
    long lines = 0;
    for (size_t i = 0; i < len; i++) if (data[i] == '\n') lines++;
    if (last_ids) {
        /* thread ids ("T<id> ...") of the last `tail` lines, oldest first */
        size_t found = 0, pos = len;
        last_ids[tail] = '\0';
        while (found < tail && pos > 0) {
            size_t end = pos - 1;           /* index of this line's '\n' */
            size_t start = end;
            while (start > 0 && data[start - 1] != '\n') start--;
            last_ids[tail - 1 - found] = (end > start + 1 && data[start] == 'T') ? data[start + 1] : '?';
            found++;
            pos = start;
        }
    }
    return lines;
}

static void *writer(void *arg)
{
    int id = (int)(long)arg;
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < NTHREADS) delay(10);
    for (int l = 0; l < LINES; l++) {
        char buf[64];
        int n = snprintf(buf, sizeof buf, "T%d line %d\n", id, l);
        pthread_mutex_lock(&mu);
        if (write(fd, buf, (size_t)n) != n) perror("write");
        pthread_mutex_unlock(&mu);
        delay(150000 + 50000 * id);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) path = argv[1];
    long before = count_lines(NULL, 0);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) { perror(path); return 1; }
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, writer, (void *)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    close(fd);
    char order[NTHREADS * LINES + 1];
    long after = count_lines(order, NTHREADS * LINES);
    printf("lines before=%ld after=%ld appended=%ld\norder of appended lines: %s\n", before, after,
           after - before, order);
    return 0;
}
