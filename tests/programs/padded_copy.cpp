// padded_copy: main wakes a worker through a mutex and two condition variables, then sizes a
// table by assigning copies of a default-constructed record: a temporary on the stack whose
// constructor sets every field but not the padding (the 7 bytes after `last`), copied whole
// into each slot, as pbzip2's std::vector<outBuff>::assign does. argv[1] and argv[2] put the
// synchronisation and the copy that many calls below main (the temporary then lies where the
// runtime's frames of the synchronisation calls were). Prints a sum over the table.
// Deterministic output. Not in the manifest: tests/verification.rs builds it at -O0 (as
// pbzip2's Makefile builds pbzip2), where the struct copy is one ranged read of 40 bytes.
//
// What it exercises: the padding holds stack bytes left by the runtime's own frames, which
// differ between record and replay (a turn taken vs. a turn waited for); the copy's digest must
// not depend on them (every replay of this program, and of pbzip2 compressing stdin, diverged).
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <thread>
#include <vector>

struct Rec {
    char *p;
    unsigned a;
    int b;
    int c;
    unsigned d;
    bool last;
    Rec *next;
    __attribute__((noinline)) Rec() : p(nullptr), a(0), b(0), c(0), d(0), last(true), next(nullptr) {}
};

static std::vector<Rec> table;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cv2 = PTHREAD_COND_INITIALIZER;
static int ready;

__attribute__((noinline)) static void sync_ops(int depth)
{
    if (depth > 0) {
        volatile char gap[40];
        gap[0] = 1;
        sync_ops(depth - 1);
        (void)gap[0];
        return;
    }
    pthread_mutex_lock(&mu);
    ready++;
    pthread_cond_broadcast(&cv);
    pthread_cond_signal(&cv2);
    pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void size_table(size_t n, int depth)
{
    if (depth > 0) {
        volatile char gap[40];
        gap[0] = 1;
        size_table(n, depth - 1);
        (void)gap[0];
        return;
    }
    table.assign(n, Rec());
}

int main(int argc, char **argv)
{
    int d1 = argc > 1 ? atoi(argv[1]) : 0, d2 = argc > 2 ? atoi(argv[2]) : 1;
    std::thread w([] {
        pthread_mutex_lock(&mu);
        while (!ready) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
    });
    sync_ops(d1);
    size_table(16, d2);
    w.join();
    long s = 0;
    for (auto &x : table) s += x.a + x.last;
    std::printf("s=%ld\n", s);
    return 0;
}
