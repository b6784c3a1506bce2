// cv_wait_for.cpp - std::condition_variable::wait_for with a 2 ms timeout in
// a loop; a producer posts 20 items with pauses of 1..4 delay-loop units
// (fixed LCG; argv[1] = unit width), so some waits time out and some are
// notified.  Prints counts and the sequence: N = notified (got an item),
// T = timed out.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

static std::mutex mu;
static std::condition_variable cv;
static int pending = 0;
static int window = 1500000;
static const int kItems = 20, kMaxWaits = 80;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    if (argc > 1) window = std::atoi(argv[1]);
    std::string seq;
    std::thread consumer([&seq] {
        int got = 0;
        std::unique_lock<std::mutex> lk(mu);
        while (got < kItems && (int)seq.size() < kMaxWaits) {
            bool ok = cv.wait_for(lk, std::chrono::milliseconds(2), [] { return pending > 0; });
            if (ok) { pending--; got++; seq += 'N'; }
            else seq += 'T';
        }
    });
    std::thread producer([] {
        unsigned x = 12345;
        for (int i = 0; i < kItems; i++) {
            x = x * 1103515245u + 12345u;
            delay(window * (int)(1 + (x >> 16) % 4));
            {
                std::lock_guard<std::mutex> g(mu);
                pending++;
            }
            cv.notify_one();
        }
    });
    producer.join();
    consumer.join();
    int n = 0, t = 0;
    for (char c : seq) (c == 'N' ? n : t)++;
    std::printf("notified=%d timed_out=%d left=%d\nseq=%s\n", n, t, pending, seq.c_str());
    return 0;
}
