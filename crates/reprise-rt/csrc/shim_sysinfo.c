/* shim_sysinfo.c: what the program asks about the machine (its memory, its processors, the CPUs
 * it may run on) and about its own limits: recorded results, given back in replay (shim.h).
 *
 * They differ between a recording and its replay (free memory moves; a replay pinned to one CPU
 * sees one), and programs size their work by them: GNU sort sized its buffer by sysinfo's free
 * memory, and its replays of a 3 MB input sorted in other chunks and diverged. glibc's own
 * calls inside other functions do not come here. */
#include "shim.h"
extern int reprise_active_init(void);
#include <sched.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>

/* A call that fills `out` (`size` bytes) and returns 0: performed while recording, its result,
 * errno and `out` recorded; in replay not performed, all three given back. A safe point. */
#define RECORDED_OUT(ret, name, params, args, out, size)                     \
    ret name params                                                          \
    {                                                                        \
        REAL(ret, name, params);                                             \
        if (!reprise_active_init()) return real_##name args;                 \
        reprise_safe_point();                                                \
        long r = -1;                                                         \
        int e = 0;                                                           \
        if (!reprise_io_replaying()) { r = (long)real_##name args; e = errno; } \
        r = reprise_shim_io_result(r, e);                                    \
        if (r == 0) reprise_io_data((void *)(out), (size));                  \
        return (ret)r;                                                       \
    }
RECORDED_OUT(int, sysinfo, (struct sysinfo *i), (i), i, sizeof *i)
RECORDED_OUT(int, getrlimit, (__rlimit_resource_t res, struct rlimit *l), (res, l), l, sizeof *l)
RECORDED_OUT(int, getrlimit64, (__rlimit_resource_t res, struct rlimit64 *l), (res, l), l, sizeof *l)
RECORDED_OUT(int, sched_getaffinity, (pid_t pid, size_t size, cpu_set_t *set), (pid, size, set), set, size)
/* libgomp sizes its thread pool by this one, from its constructor. */
RECORDED_OUT(int, pthread_getaffinity_np, (pthread_t th, size_t size, cpu_set_t *set), (th, size, set), set, size)

/* A call that returns a number: its value recorded, the recorded one in replay. */
#define RECORDED_VALUE(ret, name, params, args)                                  \
    ret name params                                                              \
    {                                                                            \
        REAL(ret, name, params);                                                 \
        ret v = real_##name args;                                                \
        return reprise_active_init() ? (ret)(int64_t)reprise_input((uint64_t)(int64_t)v) : v; \
    }
RECORDED_VALUE(long, sysconf, (int name), (name))
RECORDED_VALUE(long, __sysconf, (int name), (name))
RECORDED_VALUE(int, get_nprocs, (void), ())
RECORDED_VALUE(int, get_nprocs_conf, (void), ())
RECORDED_VALUE(long, get_phys_pages, (void), ())
RECORDED_VALUE(long, get_avphys_pages, (void), ())

/* The C interposers of this file (the tests check that the archive defines no libc name
 * strongly). */
#pragma weak sysinfo
#pragma weak getrlimit
#pragma weak getrlimit64
#pragma weak sched_getaffinity
#pragma weak pthread_getaffinity_np
#pragma weak __sysconf
#pragma weak sysconf
#pragma weak get_nprocs
#pragma weak get_nprocs_conf
#pragma weak get_phys_pages
#pragma weak get_avphys_pages
