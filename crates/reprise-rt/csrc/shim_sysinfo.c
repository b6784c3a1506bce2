/* shim_sysinfo.c: what the program asks about the machine (its memory, its processors, the CPUs
 * it may run on) and about its own limits: recorded results, given back in replay (shim.h).
 *
 * They differ between a recording and its replay (free memory moves; a replay pinned to one CPU
 * sees one), and programs size their work by them: GNU sort sized its buffer by sysinfo's free
 * memory, and its replays of a 3 MB input sorted in other chunks and diverged. glibc's own
 * calls inside other functions do not come here. */
#include "shim.h"
#include <sched.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>

/* RECORDED_OUT and RECORDED_VALUE: shim.h. */
RECORDED_OUT(int, sysinfo, (struct sysinfo *i), (i), i, sizeof *i)
RECORDED_OUT(int, getrlimit, (__rlimit_resource_t res, struct rlimit *l), (res, l), l, sizeof *l)
RECORDED_OUT(int, getrlimit64, (__rlimit_resource_t res, struct rlimit64 *l), (res, l), l, sizeof *l)
RECORDED_OUT(int, sched_getaffinity, (pid_t pid, size_t size, cpu_set_t *set), (pid, size, set), set, size)
/* libgomp sizes its thread pool by this one, from its constructor. */
RECORDED_OUT(int, pthread_getaffinity_np, (pthread_t th, size_t size, cpu_set_t *set), (th, size, set), set, size)

/* sysconf: the names fixed by the C library and the kernel's ABI (page size, clock ticks,
 * name and buffer limits) are not recorded, so a program asking for its page size in a loop
 * pays no runtime entry; the others (processors online, memory, limits that follow the
 * rlimits, cache sizes) are recorded results. */
static int sysconf_fixed(int name)
{
    switch (name) {
    case _SC_PAGESIZE: case _SC_CLK_TCK: case _SC_LINE_MAX: case _SC_IOV_MAX:
    case _SC_HOST_NAME_MAX: case _SC_LOGIN_NAME_MAX: case _SC_TTY_NAME_MAX:
    case _SC_GETPW_R_SIZE_MAX: case _SC_GETGR_R_SIZE_MAX: case _SC_THREAD_STACK_MIN:
    case _SC_THREAD_KEYS_MAX:
        return 1;
    }
    return 0;
}
static long sysconf_value(long (*real)(int), int name)
{
    if (sysconf_fixed(name) || !reprise_active_init()) return real(name);
    return (long)(int64_t)reprise_input((uint64_t)(int64_t)real(name));
}
long sysconf(int name)
{
    REAL(long, sysconf, (int));
    return sysconf_value(real_sysconf, name);
}
long __sysconf(int name)
{
    REAL(long, __sysconf, (int));
    return sysconf_value(real___sysconf, name);
}
RECORDED_VALUE(int, get_nprocs, (void), (), 1)
RECORDED_VALUE(int, get_nprocs_conf, (void), (), 1)
RECORDED_VALUE(long, get_phys_pages, (void), (), 1)
RECORDED_VALUE(long, get_avphys_pages, (void), (), 1)

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
