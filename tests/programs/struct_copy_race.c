/* struct_copy_race.c - data race on a whole-struct copy.
 * A 40-byte struct (five 8-byte fields) is overwritten with `shared = local;`
 * by the writer while the reader does `copy = shared;` (gcc emits block
 * moves / memcpy-like code for these; a race detector sees range accesses).
 * Every write stores a consistent generation g: {g, 2g+1, 3g+2, ~g, g^K}.
 * The reader keeps copying until the writer is done and checks each copy:
 * a copy whose fields disagree is torn.  argv[1] = delay-loop width between
 * accesses, argv[2] = writes (default 40000; the reader stops after 5/2 as
 * many reads).  Prints the number of reads, torn copies, generation changes
 * seen and a checksum of everything read. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define WRITES 40000
#define MAXREADS 100000
#define KEY 0x5a5a5a5a5a5aLL

struct rec {
    long long gen;
    long long a;
    long long b;
    long long inv;
    long long x;
};

static struct rec shared = { 0, 1, 2, ~0LL, KEY };  /* racy, no lock */
static int window = 60;
static long long writes = WRITES;
static long maxreads = MAXREADS;
static int arrived;
static int writer_done;    /* atomic */
static int reader_started; /* atomic */

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void gate(void)
{
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < 2) delay(10);
}

static void *writer(void *arg)
{
    (void)arg;
    gate();
    while (!__atomic_load_n(&reader_started, __ATOMIC_SEQ_CST)) sched_yield();
    for (long long g = 1; g <= writes; g++) {
        struct rec local = { g, 2 * g + 1, 3 * g + 2, ~g, g ^ KEY };
        __asm__ volatile("" ::: "memory");
        shared = local;               /* racy struct write */
        delay(window);
    }
    __atomic_store_n(&writer_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

struct rstats { long reads, torn, changes; unsigned long long sum; };

static void *reader(void *arg)
{
    struct rstats *st = arg;
    long long last = -1;
    gate();
    while (st->reads < maxreads && !__atomic_load_n(&writer_done, __ATOMIC_SEQ_CST)) {
        struct rec copy;
        __asm__ volatile("" ::: "memory");
        copy = shared;                /* racy struct read */
        __asm__ volatile("" ::: "memory");
        if (st->reads++ == 0) __atomic_store_n(&reader_started, 1, __ATOMIC_SEQ_CST);
        long long g = copy.gen;
        if (copy.a != 2 * g + 1 || copy.b != 3 * g + 2 || copy.inv != ~g || copy.x != (g ^ KEY))
            st->torn++;
        if (g != last) { st->changes++; last = g; }
        st->sum = st->sum * 1000003ull + (unsigned long long)(copy.gen + copy.a + copy.b + copy.inv + copy.x);
        delay(window);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    if (argc > 2) {
        writes = atoll(argv[2]);
        maxreads = (long)(writes * 5 / 2);
    }
    struct rstats st = { 0, 0, 0, 0 };
    pthread_t w, r;
    pthread_create(&r, NULL, reader, &st);
    pthread_create(&w, NULL, writer, NULL);
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    printf("sizeof(struct rec)=%zu reads=%ld torn=%ld changes_seen=%ld checksum=%016llx final_gen=%lld\n",
           sizeof(struct rec), st.reads, st.torn, st.changes, st.sum, shared.gen);
    return 0;
}
