/* stdin_pipe.c - a worker thread reads all of stdin with read(0, ...) in
 * 4 KiB chunks while main waits; prints the byte count, the number of lines
 * and an FNV-1a checksum, which depend only on the input (the number of
 * read() calls, which depends on how the pipe delivers data, is counted but
 * deliberately not printed). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

struct result { long long bytes, lines; long chunks; uint64_t hash; int err; };

static void *reader(void *arg)
{
    struct result *r = arg;
    char buf[4096];
    r->hash = 1469598103934665603ULL;
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            r->err = errno;
            break;
        }
        if (n == 0) break;
        r->chunks++;
        r->bytes += n;
        for (ssize_t i = 0; i < n; i++) {
            r->hash = (r->hash ^ (unsigned char)buf[i]) * 1099511628211ULL;
            if (buf[i] == '\n') r->lines++;
        }
    }
    return NULL;
}

int main(void)
{
    struct result r = { 0, 0, 0, 0, 0 };
    pthread_t t;
    pthread_create(&t, NULL, reader, &r);
    pthread_join(t, NULL);
    printf("bytes=%lld lines=%lld fnv1a=%016llx err=%d\n", r.bytes, r.lines,
           (unsigned long long)r.hash, r.err);
    return 0;
}
