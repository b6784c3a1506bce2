// cxx20_sync.cpp - C++20 std::barrier, std::latch and std::atomic<int>::wait/notify_one
// (libstdc++ implements them with inline atomics and its own futex waits through
// syscall(SYS_futex), not with pthread calls).
// Three threads run 8 phases separated by a std::barrier; in each phase every thread appends
// its id to a shared log through an atomic slot counter, so the order within a phase varies
// with the interleaving. A waiter thread sleeps in std::atomic::wait until the last phase's
// completion publishes a value, and the main thread waits on a std::latch counted down by
// every thread. Then each thread makes 6 timed attempts on a std::shared_timed_mutex (thread 0
// exclusive, the others shared; 10 us each, held for a while on success), logging which
// succeeded (racy). Prints the logs, the value the waiter saw and a checksum (invariant).
// argv[1] = window width (delay before taking a slot).
#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <latch>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 3;
constexpr int kPhases = 8;
constexpr int kAttempts = 6;

int window = 2000;

void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

} // namespace

int main(int argc, char **argv)
{
    if (argc > 1) window = std::atoi(argv[1]);
    int log[kThreads * kPhases];
    std::atomic<int> slot{0};
    std::atomic<int> published{0};
    long completions = 0;
    std::barrier bar(kThreads, [&]() noexcept { completions++; });
    std::latch done(kThreads + 1);
    int seen = 0;
    std::shared_timed_mutex stm;
    std::mutex log_lock;
    int tries[kThreads * kAttempts];
    int ntries = 0;

    std::thread waiter([&] {
        published.wait(0);
        seen = published.load();
        done.count_down();
    });
    std::vector<std::thread> ts;
    for (int id = 0; id < kThreads; id++) {
        ts.emplace_back([&, id] {
            for (int p = 0; p < kPhases; p++) {
                delay(window * ((id + p) % kThreads));
                log[slot++] = id;
                bar.arrive_and_wait();
            }
            if (id == 0) {
                published.store(100 + slot.load());
                published.notify_one();
            }
            bar.arrive_and_wait();
            for (int a = 0; a < kAttempts; a++) {
                auto wait = std::chrono::microseconds(10);
                bool ok = id == 0 ? stm.try_lock_for(wait) : stm.try_lock_shared_for(wait);
                if (ok) {
                    delay(window * 200);
                    if (id == 0)
                        stm.unlock();
                    else
                        stm.unlock_shared();
                }
                std::lock_guard<std::mutex> g(log_lock);
                tries[ntries++] = id * 10 + ok;
            }
            done.count_down();
        });
    }
    done.wait();
    for (auto &t : ts) t.join();
    waiter.join();

    long sum = 0;
    std::printf("log");
    for (int i = 0; i < kThreads * kPhases; i++) {
        std::printf(" %d", log[i]);
        sum += log[i];
    }
    std::printf("\ntimed");
    for (int i = 0; i < ntries; i++) std::printf(" %d", tries[i]);
    std::printf("\nseen %d completions %ld sum %ld\n", seen, completions, sum);
    return 0;
}
