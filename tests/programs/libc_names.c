/* libc_names.c - the program uses libc's names for its own globals and
 * functions, as C allows when the libc header is not included: variables
 * named send, recv and poll, and its own time() and read() functions
 * (glibc's would return the clock and read a descriptor; these return
 * fixed values, so the output shows which ones ran). Two threads update
 * send and recv under a mutex and race on poll[0]; main prints
 * everything. argv[1]: race-window width. */
#include <pthread.h>
#include <stdio.h>

int send = 7;
long recv[4] = {1, 2, 3, 4};
char poll[8] = "poll";

static int time_calls;
time_t time(time_t *t)
{
    time_t v = 1000 + __atomic_fetch_add(&time_calls, 1, __ATOMIC_RELAXED);
    if (t) *t = v;
    return v;
}

long read(int fd, void *buf, unsigned long n)
{
    (void)buf;
    return fd * 100 + (long)n;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int window = 3000;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
    long id = (long)arg;
    char buf[4];
    for (int i = 0; i < 50; i++) {
        pthread_mutex_lock(&mu);
        send += (int)id;
        recv[i % 4] += read((int)id, buf, sizeof buf);
        pthread_mutex_unlock(&mu);
        char c = poll[0];
        delay(window);
        poll[0] = (char)(c == 'p' ? 'P' : 'p');
    }
    time(NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        window = 0;
        for (const char *p = argv[1]; *p >= '0' && *p <= '9'; p++) window = window * 10 + (*p - '0');
    }
    pthread_t a, b;
    pthread_create(&a, NULL, worker, (void *)1L);
    pthread_create(&b, NULL, worker, (void *)2L);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    time_t t0;
    time(&t0);
    printf("send=%d recv=%ld,%ld,%ld,%ld poll=%s time=%ld calls=%d\n", send, recv[0], recv[1],
           recv[2], recv[3], poll, (long)t0, time_calls);
    return 0;
}
