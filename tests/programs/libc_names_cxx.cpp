// libc_names_cxx.cpp - C++ globals named send, recv and poll (variables
// at namespace scope keep their plain names) and the program's own extern
// "C" time(), beside std::thread and std::mutex. Two threads update send and
// recv under a mutex and race on poll; main prints everything (time()
// returns 1000 + the number of earlier calls: the program's own, not the
// clock). argv[1]: race-window width.
#include <cstdio>
#include <mutex>
#include <thread>

int send = 7;
long recv[4] = {1, 2, 3, 4};
int poll = 0;

static int time_calls;
extern "C" time_t time(time_t *t) noexcept
{
    time_t v = 1000 + __atomic_fetch_add(&time_calls, 1, __ATOMIC_RELAXED);
    if (t) *t = v;
    return v;
}

static std::mutex mu;
static int window = 3000;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void worker(int id)
{
    for (int i = 0; i < 50; i++) {
        {
            std::lock_guard<std::mutex> g(mu);
            send += id;
            recv[i % 4] += id * 10;
        }
        int v = poll;
        delay(window);
        poll = v + 1;
    }
    time(nullptr);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        window = 0;
        for (const char *p = argv[1]; *p >= '0' && *p <= '9'; p++) window = window * 10 + (*p - '0');
    }
    std::thread a(worker, 1), b(worker, 2);
    a.join();
    b.join();
    std::printf("send=%d recv=%ld,%ld,%ld,%ld poll=%d time=%ld calls=%d\n", send, recv[0],
                recv[1], recv[2], recv[3], poll, static_cast<long>(time(nullptr)), time_calls);
    return 0;
}
