/* order_violation.c - use-before-init order violation.
 * The initializer thread publishes the config pointer BEFORE filling in its
 * fields (publish / window / init).  The user thread probes the pointer
 * repeatedly and records, per probe, whether it saw NULL ('N'), a published
 * but uninitialised object ('U'), or the fully initialised object ('I').
 * It never dereferences NULL, so the program never crashes.
 * argv[1] = race-window width (delay between publish and init). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define PROBES 12

struct config {
    volatile int magic; /* 0 until initialised */
    volatile int value;
};

static struct config storage;             /* zero-initialised */
static struct config *volatile cfg;       /* NULL until published */
static int window = 30000;
static pthread_barrier_t start;
static char seen[PROBES + 1];
static int observed_value;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *initializer(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    delay(window);         /* some setup work before publishing */
    cfg = &storage;        /* BUG: published before initialisation */
    delay(window);         /* race window */
    storage.value = 42;
    storage.magic = 0x1234;
    return NULL;
}

static void *user(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    for (int p = 0; p < PROBES; p++) {
        struct config *c = cfg;
        if (c == NULL) {
            seen[p] = 'N';
        } else if (c->magic != 0x1234) {
            seen[p] = 'U';
            observed_value = c->value; /* uses uninitialised config */
        } else {
            seen[p] = 'I';
            observed_value = c->value;
        }
        delay(window / 2);
    }
    seen[PROBES] = '\0';
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t a, b;
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&a, NULL, initializer, NULL);
    pthread_create(&b, NULL, user, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&start);
    int uninit = 0, null = 0;
    for (int p = 0; p < PROBES; p++) {
        if (seen[p] == 'U') uninit++;
        if (seen[p] == 'N') null++;
    }
    printf("probes=%s null=%d used_before_init=%d last_value=%d\n", seen, null,
           uninit, observed_value);
    return 0;
}
