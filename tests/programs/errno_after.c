/* errno_after.c - threads make failing calls (close(-1), sem_trywait on an
 * empty semaphore, strtol overflow, open of a missing file, a second
 * pthread_mutex_trylock) and read errno right after, while racing on a plain
 * shared counter (read / delay / write; argv[1] = race-window width).
 * errno is thread-local, so the errno values are deterministic; the final
 * counter shows lost updates and varies. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NTHREADS 3
#define ITERS 1000

static volatile int counter;  /* racy */
static int window = 4000;
static sem_t empty_sem;
static int arrived;
static pthread_barrier_t start;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

struct res { int id; int e[5]; long ok, bad; };

static const char *ename(int e)
{
    switch (e) {
    case 0: return "0";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ERANGE: return "ERANGE";
    case ENOENT: return "ENOENT";
    case EBUSY: return "EBUSY";
    default: return "other";
    }
}

static void *worker(void *p)
{
    struct res *r = p;
    int expect[5] = { EBADF, EAGAIN, ERANGE, ENOENT, EBUSY };
    pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&own);
    pthread_barrier_wait(&start);
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);  /* spin gate */
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < NTHREADS) delay(10);
    for (int k = 0; k < ITERS; k++) {
        int e[5];
        errno = 0; if (close(-1) == -1) e[0] = errno; else e[0] = 0;
        errno = 0; if (sem_trywait(&empty_sem) == -1) e[1] = errno; else e[1] = 0;
        errno = 0; strtol("999999999999999999999999", NULL, 10); e[2] = errno;
        errno = 0;
        int fd = open("/nonexistent-reprise-dir/x", O_RDONLY);
        e[3] = fd == -1 ? errno : 0;
        if (fd >= 0) close(fd);
        e[4] = pthread_mutex_trylock(&own);  /* returns the error code */
        int tmp = counter;
        delay(window);
        counter = tmp + 1;
        for (int j = 0; j < 5; j++) {
            if (e[j] == expect[j]) r->ok++; else r->bad++;
            if (k == ITERS - 1) r->e[j] = e[j];
        }
        delay(window / 2);
    }
    pthread_mutex_unlock(&own);
    pthread_mutex_destroy(&own);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    sem_init(&empty_sem, 0, 0);
    pthread_barrier_init(&start, NULL, NTHREADS);
    pthread_t th[NTHREADS];
    struct res rs[NTHREADS];
    memset(rs, 0, sizeof rs);
    for (int i = 0; i < NTHREADS; i++) {
        rs[i].id = i;
        pthread_create(&th[i], NULL, worker, &rs[i]);
    }
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NTHREADS; i++) {
        printf("thread %d: last errno close=%s sem_trywait=%s strtol=%s open=%s trylock=%s; ok=%ld bad=%ld\n",
               i, ename(rs[i].e[0]), ename(rs[i].e[1]), ename(rs[i].e[2]),
               ename(rs[i].e[3]), ename(rs[i].e[4]), rs[i].ok, rs[i].bad);
    }
    errno = 0;
    close(-1);
    printf("main errno after close(-1)=%s\n", ename(errno));
    printf("counter expected=%d final=%d\n", NTHREADS * ITERS, counter);
    pthread_barrier_destroy(&start);
    sem_destroy(&empty_sem);
    return 0;
}
