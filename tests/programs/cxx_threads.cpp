// cxx_threads.cpp - C++17 std::thread / std::mutex / std::lock_guard /
// std::atomic<int> / std::condition_variable.
// Main pushes tasks into a small bounded work queue; worker threads pop and
// process them.  Which worker processes which task varies with the
// interleaving (per-worker counts/sums), the totals are invariant.
// argv[1] = window width (per-task processing delay outside the lock).
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace {

constexpr int kWorkers = 3;
constexpr int kTasks = 600;
constexpr std::size_t kCapacity = 8;

int window = 3000;

void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

class WorkQueue {
public:
    void push(int v)
    {
        std::unique_lock<std::mutex> lk(m_);
        not_full_.wait(lk, [this] { return q_.size() < kCapacity; });
        q_.push_back(v);
        not_empty_.notify_one();
    }
    void close()
    {
        std::lock_guard<std::mutex> lk(m_);
        closed_ = true;
        not_empty_.notify_all();
    }
    // Returns false once the queue is closed and drained.
    bool pop(int &out)
    {
        std::unique_lock<std::mutex> lk(m_);
        not_empty_.wait(lk, [this] { return !q_.empty() || closed_; });
        if (q_.empty()) return false;
        out = q_.front();
        q_.pop_front();
        not_full_.notify_one();
        return true;
    }

private:
    std::mutex m_;
    std::condition_variable not_empty_, not_full_;
    std::deque<int> q_;
    bool closed_ = false;
};

struct Stats {
    int count = 0;
    long sum = 0;
    unsigned long order_hash = 0;
};

} // namespace

int main(int argc, char **argv)
{
    if (argc > 1) window = std::atoi(argv[1]);
    WorkQueue queue;
    std::atomic<int> processed{0};
    std::atomic<long> atomic_total{0};
    std::mutex stats_mutex;
    long locked_total = 0;
    std::vector<Stats> stats(kWorkers);
    std::vector<std::thread> workers;

    for (int w = 0; w < kWorkers; w++) {
        workers.emplace_back([&, w] {
            int task;
            while (queue.pop(task)) {
                delay(window);
                long result = static_cast<long>(task) * task % 1009;
                stats[w].count++;
                stats[w].sum += result;
                stats[w].order_hash = stats[w].order_hash * 31 + static_cast<unsigned long>(task);
                processed.fetch_add(1);
                atomic_total.fetch_add(result);
                std::lock_guard<std::mutex> lk(stats_mutex);
                locked_total += result;
            }
        });
    }
    for (int t = 1; t <= kTasks; t++) queue.push(t);
    queue.close();
    for (auto &th : workers) th.join();

    long expected = 0;
    for (int t = 1; t <= kTasks; t++) expected += static_cast<long>(t) * t % 1009;
    for (int w = 0; w < kWorkers; w++)
        std::printf("worker %d: tasks=%d sum=%ld order_hash=%lu\n", w, stats[w].count,
                    stats[w].sum, stats[w].order_hash);
    std::printf("processed=%d total=%ld locked_total=%ld expected=%ld\n", processed.load(),
                atomic_total.load(), locked_total, expected);
    return 0;
}
