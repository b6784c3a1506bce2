/* block_reader: a reader thread and a pool of checksum workers, the shape of a parallel
 * compressor. main reads the file named by argv[1] (default input.txt) with read() in blocks
 * of 900000 bytes into fresh malloc'd buffers and queues them; two workers take blocks off
 * the queue (mutex + condition variables, a bounded queue), checksum them and store the sum
 * in the block's slot; main prints every block's length and checksum in block order after
 * joining. Deterministic output.
 *
 * What it exercises: the reads of a regular file of 1 MiB or more are re-executed in replay
 * and checked by hash (not recorded); while recording, the first such read of a file sends
 * the file's identity to the launcher, runtime work that must not count as the program's
 * events (it did, through the copies of a `--wrap`ped memcpy/memset: every replay then
 * diverged at the read's first result). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BLOCK 900000
#define MAXB 64
#define QCAP 2

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static struct {
    char *buf;
    long len;
    int id;
} queue[QCAP];
static int qhead, qcount, done;
static long lens[MAXB];
static unsigned long sums[MAXB];

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (qcount == 0 && !done) pthread_cond_wait(&not_empty, &mu);
        if (qcount == 0) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        char *b = queue[qhead].buf;
        long n = queue[qhead].len;
        int id = queue[qhead].id;
        qhead = (qhead + 1) % QCAP;
        qcount--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&mu);
        unsigned long s = 5381;
        for (long i = 0; i < n; i += 64) s = s * 33 + (unsigned char)b[i];
        free(b);
        pthread_mutex_lock(&mu);
        sums[id] = s;
        pthread_mutex_unlock(&mu);
    }
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "input.txt";
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
    int nb = 0;
    while (nb < MAXB) {
        char *b = malloc(BLOCK);
        long n = 0, r = 0;
        while (n < BLOCK && (r = read(fd, b + n, BLOCK - n)) > 0) n += r;
        if (n == 0) {
            free(b);
            break;
        }
        lens[nb] = n;
        pthread_mutex_lock(&mu);
        while (qcount == QCAP) pthread_cond_wait(&not_full, &mu);
        queue[(qhead + qcount) % QCAP].buf = b;
        queue[(qhead + qcount) % QCAP].len = n;
        queue[(qhead + qcount) % QCAP].id = nb++;
        qcount++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&mu);
    }
    close(fd);
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < nb; i++) {
        printf("block %d: %ld bytes, sum %016lx\n", i, lens[i], sums[i]);
        total += lens[i];
    }
    printf("blocks=%d bytes=%ld\n", nb, total);
    return 0;
}
