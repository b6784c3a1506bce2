/* string_race.c - data races through libc's string functions.
 * A writer copies one of two strings of different lengths into a shared
 * 48-byte buffer, alternately with strcpy, strncpy, stpcpy and
 * strcat, each under a lock; a reader uses the same buffer WITHOUT the lock:
 * strcmp, strncmp, strlen, strnlen, strchr, strrchr, strdup, strstr, strcasecmp,
 * strcspn and memchr (the pattern of mafft's
 * tditeration.c: strcmp of a shared string another thread strcpy's under a
 * mutex).  Every value the reader sees depends on the interleaving.  Prints
 * what it counted (varies from run to run).  argv[1] = rounds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const A = "apples and oranges, pears and plums";
static const char *const B = "bananas";
static char shared[48] = "apples and oranges, pears and plums";
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static int rounds = 5000;
static int writing; /* atomic: the writer has started */

static void *writer(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    __atomic_store_n(&writing, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < rounds; i++) {
        const char *s = (i & 1) ? A : B;
        pthread_mutex_lock(&lock);
        switch (i & 6) {
        case 0: strcpy(shared, s); break;
        case 2: strncpy(shared, s, sizeof shared - 1); break;
        case 4: stpcpy(shared, s); break;
        default: shared[0] = 0; strcat(shared, s); break;
        }
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void *reader(void *arg)
{
    long *c = arg;
    pthread_barrier_wait(&start);
    while (!__atomic_load_n(&writing, __ATOMIC_SEQ_CST)) sched_yield();
    for (int i = 0; i < rounds; i++) {
        c[0] += strcmp(shared, A) == 0;
        c[1] += strncmp(shared, B, 4) == 0;
        c[2] += (long)strlen(shared);
        c[3] += (long)strnlen(shared, 10);
        const char *p = strchr(shared, 'p');
        c[4] += p ? p - shared : -1;
        p = strrchr(shared, 'a');
        c[5] += p ? p - shared : -1;
        c[7] += strstr(shared, "pears") != NULL;
        c[8] += strcasecmp(shared, "BANANAS") == 0;
        c[9] += (long)strcspn(shared, ",");
        c[10] += memchr(shared, 'n', 12) != NULL;
        if ((i & 63) == 0) {
            char *d = strdup(shared);
            c[6] += (long)strlen(d);
            free(d);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) rounds = atoi(argv[1]);
    long counts[11] = { 0 };
    pthread_t w, r;
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&w, NULL, writer, NULL);
    pthread_create(&r, NULL, reader, counts);
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    printf("same %ld prefix %ld len %ld nlen %ld chr %ld rchr %ld dup %ld\n", counts[0],
           counts[1], counts[2], counts[3], counts[4], counts[5], counts[6]);
    printf("str %ld case %ld cspn %ld memchr %ld\n", counts[7], counts[8], counts[9], counts[10]);
    printf("final %s\n", shared);
    return 0;
}
