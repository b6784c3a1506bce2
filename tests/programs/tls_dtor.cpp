// tls_dtor.cpp - C++ thread_local objects with destructors and a
// pthread_key_create destructor.  3 threads each touch a thread_local
// Tracker (constructed on first use) and set a pthread key; on thread exit
// the destructors append "T<i>" (thread_local dtor) and "K<i>" (key dtor)
// to a mutex-protected shared log.  Threads finish at different times
// (work of argv[1]-wide delay-loop units, plus a racy shared counter), so
// the order of log entries varies.  Main prints the log after joining.
#include <pthread.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

static std::mutex log_mu;
static std::string dtor_log;
static pthread_key_t key;
static int window = 3000;
static std::atomic<int> arrived{0};
static volatile int racy_counter = 0;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void append(const char *what, int idx)
{
    std::lock_guard<std::mutex> g(log_mu);
    dtor_log += what;
    dtor_log += std::to_string(idx);
    dtor_log += ' ';
}

struct Tracker {
    int idx = -1;
    long work = 0;
    ~Tracker()
    {
        if (idx >= 0) append("T", idx);
    }
};

static thread_local Tracker tracker;

static void key_dtor(void *p)
{
    append("K", (int)(long)p - 1);
}

int main(int argc, char **argv)
{
    if (argc > 1) window = std::atoi(argv[1]);
    pthread_key_create(&key, key_dtor);
    const int n = 3;
    std::vector<std::thread> th;
    for (int i = 0; i < n; i++) {
        th.emplace_back([i] {
            tracker.idx = i;
            pthread_setspecific(key, (void *)(long)(i + 1));
            arrived.fetch_add(1);
            while (arrived.load() < n) std::this_thread::yield();
            for (int r = 0; r < 200; r++) {
                int tmp = racy_counter;  // racy read / delay / write
                delay(window);
                racy_counter = tmp + 1;
                tracker.work++;
            }
        });
    }
    for (auto &t : th) t.join();
    pthread_key_delete(key);
    std::printf("counter=%d (expected %d)\nlog: %s\n", racy_counter, n * 200, dtor_log.c_str());
    return 0;
}
