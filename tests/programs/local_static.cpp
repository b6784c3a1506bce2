// local_static.cpp - a C++ function-local static whose constructor does
// visible work and records which thread ran it, hit by 4 threads at once.
// The C++ runtime guards the initialisation (__cxa_guard_acquire/release),
// so exactly one thread constructs it while the others block.  Which thread
// wins varies.  argv[1] = delay-loop width inside the constructor.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

static int window = 200000;
static thread_local int my_index = -1;
static std::atomic<int> arrived{0};
static std::atomic<int> ctor_runs{0};
static std::atomic<int> go{0};

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

struct Table {
    int initialiser;
    unsigned checksum;
    std::mutex mu;
    int hits = 0;
    char order[8] = {0};  // order in which threads got through, under mu
    Table() : initialiser(my_index), checksum(0)
    {
        ctor_runs.fetch_add(1);
        for (unsigned i = 1; i <= 1000; i++) checksum = checksum * 31u + i;
        delay(window);  // keep the other threads waiting on the guard
    }
};

static Table &table()
{
    static Table t;  // guarded local static
    return t;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = std::atoi(argv[1]);
    const int n = 4;
    std::vector<std::thread> th;
    int seen_init[n];
    for (int i = 0; i < n; i++) {
        th.emplace_back([i, &seen_init, n] {
            my_index = i;
            arrived.fetch_add(1);
            while (!go.load()) std::this_thread::yield();
            Table &t = table();
            seen_init[i] = t.initialiser;
            std::lock_guard<std::mutex> g(t.mu);
            t.order[t.hits++] = static_cast<char>('0' + i);
        });
    }
    while (arrived.load() < n) std::this_thread::yield();
    go.store(1);  // release all threads at once
    for (auto &t : th) t.join();
    Table &t = table();
    std::printf("initialised by thread %d, ctor_runs=%d, checksum=%08x, hits=%d, order=%s\n",
                t.initialiser, ctor_runs.load(), t.checksum, t.hits, t.order);
    for (int i = 0; i < n; i++) std::printf("thread %d saw initialiser %d\n", i, seen_init[i]);
    return 0;
}
