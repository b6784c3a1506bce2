/* stdin_scanf.c - input through stdio, the way most programs read it: main
 * reads stdin with scanf (a count, then that many numbers), getchar,
 * fgets (a line) and fread (the rest, in 1000-byte pieces), and a worker
 * thread reads the file named by argv[1] (default stdin_scanf.input) with
 * fopen, fscanf, fgetc, fgets and fread, while both race on a plain
 * counter. Prints what was read (sums, lengths, FNV-1a hashes of the text)
 * and the counter. Meant to be run as `prog FILE < INPUT`: every byte comes
 * from stdio's internal reads of a regular file. argv[2]: race-window
 * width. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long counter;
static int window = 2000;
static const char *path = "stdin_scanf.input";

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void bump(void)
{
    long v = counter;
    delay(window);
    counter = v + 1;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static char file_report[256];

static void *file_reader(void *arg)
{
    (void)arg;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(file_report, sizeof file_report, "file: cannot open %s", path);
        return NULL;
    }
    long a = 0, b = 0;
    int got = fscanf(f, "%ld %ld", &a, &b);
    bump();
    int c = fgetc(f); /* the newline after the numbers */
    char line[128] = "";
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    bump();
    char rest[4096];
    size_t n = fread(rest, 1, sizeof rest, f);
    uint64_t h = fnv(fnv(1469598103934665603ULL, line, strlen(line)), rest, n);
    snprintf(file_report, sizeof file_report, "file: scanned %d (%ld %ld) c=%d line=%zu rest=%zu hash=%016llx", got, a,
             b, c, strlen(line), n, (unsigned long long)h);
    fclose(f);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) path = argv[1];
    if (argc > 2) window = atoi(argv[2]);
    pthread_t t;
    pthread_create(&t, NULL, file_reader, NULL);
    int count = 0;
    long sum = 0;
    if (scanf("%d", &count) != 1) count = 0;
    for (int i = 0; i < count; i++) {
        long v;
        if (scanf("%ld", &v) != 1) break;
        sum += v;
        bump();
    }
    int nl = getchar();
    char line[256] = "";
    if (!fgets(line, sizeof line, stdin)) line[0] = 0;
    uint64_t h = fnv(1469598103934665603ULL, line, strlen(line));
    size_t total = 0, n;
    char buf[1000];
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
        total += n;
        h = fnv(h, buf, n);
        bump();
    }
    pthread_join(t, NULL);
    printf("stdin: count=%d sum=%ld nl=%d line=%zu rest=%zu hash=%016llx eof=%d\n", count, sum, nl, strlen(line), total,
           (unsigned long long)h, feof(stdin) != 0);
    printf("%s\n", file_report);
    printf("counter=%ld\n", (long)counter);
    return 0;
}
