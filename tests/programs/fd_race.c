/* fd_race.c - descriptor numbers drawn by two threads at once: one makes pipes, dups and
 * eventfds and closes them, 300 times; the other opens the file argv[1] (default "big.bin";
 * the test gives it 2 MB, so its reads are re-executed in replay), reads a block from it with
 * pread and closes it, 300 times. Prints the sum of the bytes read. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>
static const char *path = "big.bin";
static long sum;
static void *pipes(void *a) {
    (void)a;
    for (int i = 0; i < 300; i++) {
        int p[2];
        if (pipe(p) != 0) return NULL;
        int d = dup(p[0]);
        int e = eventfd(0, 0);
        close(p[0]); close(p[1]); close(d); if (e >= 0) close(e);
    }
    return NULL;
}
static void *reader(void *a) {
    (void)a;
    unsigned char b[4096];
    for (int i = 0; i < 300; i++) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) { sum = -1; return NULL; }
        long n = pread(fd, b, sizeof b, (i * 4096L) % 1900000);
        for (long k = 0; k < n; k++) sum += b[k];
        close(fd);
    }
    return NULL;
}
int main(int argc, char **argv) {
    if (argc > 1) path = argv[1];
    pthread_t t[2];
    pthread_create(&t[0], NULL, pipes, NULL);
    pthread_create(&t[1], NULL, reader, NULL);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    printf("sum %ld\n", sum);
    return 0;
}
