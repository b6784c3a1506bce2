/* timestamps.c - reads the clocks: clock_gettime(CLOCK_MONOTONIC and
 * CLOCK_REALTIME), time(NULL) and gettimeofday(), in main and in a second
 * thread, then measures a usleep(2000) with each clock.  Also what the machine
 * looks like: free memory (sysinfo, sysconf), the CPUs the thread may run on
 * (sched_getaffinity: one in a replay pinned to a CPU) and a resource limit;
 * timespec_get (the clock read inside libc), getrusage and getloadavg; the
 * free space and files of the file system holding the current directory
 * (statvfs, fstatvfs, statfs, fstatfs: they move as soon as anything writes).
 * Every value varies run to run; a faithful replay must reproduce them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct snap {
    struct timespec mono, real;
    time_t t;
    struct timeval tv;
};

static void take(struct snap *s)
{
    clock_gettime(CLOCK_MONOTONIC, &s->mono);
    clock_gettime(CLOCK_REALTIME, &s->real);
    s->t = time(NULL);
    gettimeofday(&s->tv, NULL);
}

static long long ns(const struct timespec *a) { return (long long)a->tv_sec * 1000000000LL + a->tv_nsec; }
static long long us(const struct timeval *a) { return (long long)a->tv_sec * 1000000LL + a->tv_usec; }

static void show(const char *who, const struct snap *s)
{
    printf("%s: mono=%lld.%09ld real=%lld.%09ld time=%lld tod=%lld.%06ld\n", who,
           (long long)s->mono.tv_sec, s->mono.tv_nsec, (long long)s->real.tv_sec, s->real.tv_nsec,
           (long long)s->t, (long long)s->tv.tv_sec, (long)s->tv.tv_usec);
}

static void *other(void *arg)
{
    struct snap *s = arg;
    take(&s[0]);
    usleep(2000);
    take(&s[1]);
    return NULL;
}

int main(void)
{
    struct snap a, b, th[2];
    pthread_t t;
    take(&a);
    pthread_create(&t, NULL, other, th);
    usleep(2000);
    take(&b);
    pthread_join(t, NULL);
    show("main before", &a);
    show("main after ", &b);
    show("thread before", &th[0]);
    show("thread after ", &th[1]);
    printf("main usleep(2000): mono=%lld ns real=%lld ns tod=%lld us time=%lld s\n",
           ns(&b.mono) - ns(&a.mono), ns(&b.real) - ns(&a.real), us(&b.tv) - us(&a.tv),
           (long long)(b.t - a.t));
    printf("thread usleep(2000): mono=%lld ns\n", ns(&th[1].mono) - ns(&th[0].mono));
    printf("thread started %lld ns after main's first reading; monotonic non-decreasing: %s\n",
           ns(&th[0].mono) - ns(&a.mono), ns(&b.mono) >= ns(&a.mono) ? "yes" : "no");
    struct sysinfo si;
    cpu_set_t cpus;
    struct rlimit nofile;
    if (sysinfo(&si) != 0 || sched_getaffinity(0, sizeof cpus, &cpus) != 0 || getrlimit(RLIMIT_NOFILE, &nofile) != 0)
        return 1;
    printf("free memory %llu bytes, %ld free pages; may run on %d CPUs of %ld; at most %llu files\n",
           (unsigned long long)si.freeram * si.mem_unit, sysconf(_SC_AVPHYS_PAGES), CPU_COUNT(&cpus),
           sysconf(_SC_NPROCESSORS_ONLN), (unsigned long long)nofile.rlim_cur);
    /* Clocks read inside libc (timespec_get), CPU time used and the load average. */
    struct timespec tg;
    struct rusage ru;
    double load[3] = {0, 0, 0};
    if (timespec_get(&tg, TIME_UTC) != TIME_UTC || getrusage(RUSAGE_SELF, &ru) != 0)
        return 1;
    int nl = getloadavg(load, 3);
    printf("timespec_get %lld.%09ld; cpu %ld.%06ld s user %ld.%06ld s system; load %d %.4f %.4f %.4f\n",
           (long long)tg.tv_sec, tg.tv_nsec, (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
           (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, nl, load[0], load[1], load[2]);
    /* The file system's free space and files, four ways. */
    struct statvfs v, fv;
    struct statfs f, ff;
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    if (dir < 0 || statvfs(".", &v) != 0 || fstatvfs(dir, &fv) != 0 || statfs(".", &f) != 0 || fstatfs(dir, &ff) != 0)
        return 1;
    close(dir);
    printf("file system: %llu/%llu blocks free, %llu files free; fstatvfs %llu; statfs %llu %llu; fstatfs %llu\n",
           (unsigned long long)v.f_bavail, (unsigned long long)v.f_bfree, (unsigned long long)v.f_ffree,
           (unsigned long long)fv.f_bavail, (unsigned long long)f.f_bavail, (unsigned long long)f.f_ffree,
           (unsigned long long)ff.f_bavail);
    return 0;
}
