/* inline_copy.c - racy 48-byte headers copied with memcpy, cleared with memset and compared
 * with memcmp, as SQLite's WAL index header is: a writer publishes a header into two slots
 * with no lock, readers copy both and count the copies that agree (torn otherwise).
 * gcc -O2 expands these constant-size calls inline after its ThreadSanitizer pass. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define ITERS 20000
#define NREADERS 2

struct hdr {
    unsigned long v[6];
};

static struct hdr table[64];
static struct hdr slot[2];
static volatile int stop;

static void *writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        memcpy(&slot[0], &table[i % 64], sizeof(struct hdr));
        if (i % 16 == 0) memset(&slot[1], 0, sizeof(struct hdr));
        memcpy(&slot[1], &table[i % 64], sizeof(struct hdr));
    }
    stop = 1;
    return NULL;
}

static void *reader(void *arg)
{
    unsigned long *res = arg, same = 0, torn = 0, sum = 0;
    for (int i = 0; i < ITERS && !stop; i++) {
        struct hdr a, b;
        memcpy(&a, &slot[0], sizeof a);
        memcpy(&b, &slot[1], sizeof b);
        if (memcmp(&a, &b, sizeof a) == 0) same++;
        else torn++;
        sum = sum * 31 + a.v[0] + b.v[5];
    }
    res[0] = same, res[1] = torn, res[2] = sum;
    return NULL;
}

int main(void)
{
    for (int i = 0; i < 64; i++)
        for (int k = 0; k < 6; k++) table[i].v[k] = (unsigned long)i * 1000 + k;
    pthread_t w, r[NREADERS];
    unsigned long res[NREADERS][3];
    pthread_create(&w, NULL, writer, NULL);
    for (int i = 0; i < NREADERS; i++) pthread_create(&r[i], NULL, reader, res[i]);
    pthread_join(w, NULL);
    for (int i = 0; i < NREADERS; i++) {
        pthread_join(r[i], NULL);
        printf("reader %d: same %lu torn %lu sum %lu\n", i, res[i][0], res[i][1], res[i][2]);
    }
    return 0;
}
