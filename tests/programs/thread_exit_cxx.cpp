// thread_exit_cxx.cpp - C++ threads ended by glibc's forced unwind, while
// racing on a plain counter:
//   T0 calls pthread_exit((void *)100) three calls deep; an RAII object at
//      each depth ("d1 d2 d3" destroyed innermost first: "~3 ~2 ~1") and a
//      catch (abi::__forced_unwind &) that notes "f0" and rethrows;
//   T1 is cancelled while blocked in pthread_cond_wait inside a function with
//      an RAII guard that unlocks the mutex ("~w1");
//   T2 is cancelled in a sleep loop (std::this_thread::sleep_for) under a
//      C++ pthread_cleanup_push handler ("c2") and an RAII object ("~s2");
//   T3 returns 103 normally through an RAII object ("~r3");
//   T4 is a std::thread that returns normally ("~x4").
// Destructors and handlers append to a mutex-protected log (order varies);
// main joins everything and prints exit values (-1 = PTHREAD_CANCELED), the
// log and the racy counter. argv[1]: race-window width.
#include <pthread.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>
#include <mutex>
#include <string>
#include <thread>

static std::mutex log_mu;
static std::string log_text;
static volatile long counter;
static int window = 3000;

static pthread_mutex_t wait_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_cv = PTHREAD_COND_INITIALIZER;
static int waiting;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static void bump(int times)
{
    for (int i = 0; i < times; i++) {
        long v = counter;
        delay(window);
        counter = v + 1;
    }
}

static void note(const char *what)
{
    std::lock_guard<std::mutex> g(log_mu);
    log_text += what;
    log_text += ' ';
}

struct Noisy {
    const char *name;
    explicit Noisy(const char *n) : name(n) {}
    ~Noisy() { note(name); }
};

[[gnu::noinline]] static void depth3()
{
    Noisy n("~3");
    bump(20);
    pthread_exit(reinterpret_cast<void *>(100L));
}
[[gnu::noinline]] static void depth2()
{
    Noisy n("~2");
    depth3();
    note("unreachable2");
}
[[gnu::noinline]] static void depth1()
{
    Noisy n("~1");
    depth2();
    note("unreachable1");
}

static void *t0(void *)
{
    try {
        depth1();
    } catch (abi::__forced_unwind &) {
        note("f0");
        throw;
    }
    return nullptr;
}

struct Unlocker {
    ~Unlocker()
    {
        pthread_mutex_unlock(&wait_mu);
        note("~w1");
    }
};

[[gnu::noinline]] static void wait_forever()
{
    pthread_mutex_lock(&wait_mu);
    waiting = 1;
    Unlocker u;
    for (;;) pthread_cond_wait(&wait_cv, &wait_mu);
}

static void *t1(void *)
{
    wait_forever();
    return nullptr;
}

static void cleanup_c2(void *) { note("c2"); }

static void *t2(void *)
{
    Noisy n("~s2");
    pthread_cleanup_push(cleanup_c2, nullptr);
    for (;;) std::this_thread::sleep_for(std::chrono::microseconds(200));
    pthread_cleanup_pop(0);
    return nullptr;
}

static void *t3(void *)
{
    Noisy n("~r3");
    bump(20);
    return reinterpret_cast<void *>(103L);
}

int main(int argc, char **argv)
{
    if (argc > 1) window = std::atoi(argv[1]);
    void *(*fns[])(void *) = {t0, t1, t2, t3};
    const int n = sizeof fns / sizeof fns[0];
    pthread_t th[n];
    for (int i = 0; i < n; i++) pthread_create(&th[i], nullptr, fns[i], nullptr);
    std::thread x([] {
        Noisy k("~x4");
        bump(20);
    });
    bump(20);
    for (;;) {
        pthread_mutex_lock(&wait_mu);
        int w = waiting;
        pthread_mutex_unlock(&wait_mu);
        if (w) break;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    pthread_cancel(th[1]);
    pthread_cancel(th[2]);
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(th[i], &r);
        std::printf("T%d -> %ld\n", i, r == PTHREAD_CANCELED ? -1L : reinterpret_cast<long>(r));
    }
    x.join();
    std::printf("log: %s\n", log_text.c_str());
    std::printf("counter=%ld\n", static_cast<long>(counter));
    return 0;
}
