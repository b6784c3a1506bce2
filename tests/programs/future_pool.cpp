// A thread pool of std::packaged_task jobs whose results come back through std::future, the
// way many C++ programs use threads. Race-free: every shared datum is guarded by a mutex or
// handed over by the library. But which thread drops the last reference to a job (the
// submitter's std::shared_ptr or the worker's copy) is decided by an atomic reference count,
// so which thread frees the job's memory differs from run to run. Each job also locks a mutex
// that lives in a heap block of its own. Output: the sum of the results and the job count.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

class Pool {
    std::vector<std::thread> workers;
    std::queue<std::function<void()>> jobs;
    std::mutex m;
    std::condition_variable cv;
    bool stopping = false;

    void work() {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock<std::mutex> l(m);
                cv.wait(l, [this] { return stopping || !jobs.empty(); });
                if (jobs.empty())
                    return;
                job = std::move(jobs.front());
                jobs.pop();
            }
            job();
        }
    }

  public:
    explicit Pool(int n) {
        for (int i = 0; i < n; i++)
            workers.emplace_back([this] { work(); });
    }
    template <class F> std::future<long> submit(F f) {
        auto task = std::make_shared<std::packaged_task<long()>>(std::move(f));
        std::future<long> r = task->get_future();
        {
            std::lock_guard<std::mutex> l(m);
            jobs.emplace([task] { (*task)(); });
        }
        cv.notify_one();
        return r;
    }
    ~Pool() {
        {
            std::lock_guard<std::mutex> l(m);
            stopping = true;
        }
        cv.notify_all();
        for (auto &w : workers)
            w.join();
    }
};

struct Tally {
    std::mutex m;
    long done = 0;
};

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 300;
    auto tally = std::make_unique<Tally>();
    long total = 0;
    {
        Pool pool(3);
        std::vector<std::future<long>> results;
        for (int i = 0; i < n; i++) {
            Tally *t = tally.get();
            results.push_back(pool.submit([i, t] {
                long s = 0;
                for (int k = 0; k < 2000 * (i % 5 + 1); k++)
                    s += (k ^ i) & 0xff;
                std::lock_guard<std::mutex> l(t->m);
                t->done++;
                return s;
            }));
        }
        for (auto &r : results)
            total += r.get();
    }
    printf("total %ld jobs %ld\n", total, tally->done);
    return 0;
}
