/* shim_omp.c: OpenMP's locks (libgomp's critical sections, atomic sections and omp_lock_t),
 * ordered like mutexes (sync.rs, reprise_lock_with). libgomp locks with its own futexes, which
 * no pthread interposer sees; unseen, a replay deadlocked: the thread that won a critical
 * section waited for an ownership edge from the thread blocked on it. Worksharing loops with
 * a static schedule need nothing (their iterations are computed from the thread number); the
 * dynamic, guided and runtime schedules hand chunks out by atomic counters: the chunk each
 * call took is recorded and given back in replay (not for the `ordered` loops). A program without OpenMP never calls these (each real one is found on
 * first use). */
#include "shim.h"
#include <stdbool.h>

extern void reprise_lock_with(const void *obj, void (*lock)(void *), void *arg);
extern int reprise_try_lock_with(const void *obj, int (*lock_try)(void *), void (*lock)(void *), void *arg);
extern void reprise_unlock_with(void (*unlock)(void *), void *arg);

/* The objects of the unnamed critical section and of `#pragma omp atomic` sections. */
static char critical_obj, atomic_obj;

typedef void (*fn0)(void);
typedef void (*fn1)(void *);
typedef int (*ifn1)(void *);
struct call { void *f; void *a; };
static void call0(void *c) { ((fn0)((struct call *)c)->f)(); }
static void call1(void *c) { ((fn1)((struct call *)c)->f)(((struct call *)c)->a); }

#define LOCK0(name, obj)                                   \
    void name(void)                                        \
    {                                                      \
        REAL(void, name, (void));                          \
        struct call c = {(void *)real_##name, NULL};       \
        reprise_lock_with((obj), call0, &c);               \
    }
#define UNLOCK0(name)                                      \
    void name(void)                                        \
    {                                                      \
        REAL(void, name, (void));                          \
        struct call c = {(void *)real_##name, NULL};       \
        reprise_unlock_with(call0, &c);                    \
    }
#define LOCK1(name, type)                                  \
    void name(type p)                                      \
    {                                                      \
        REAL(void, name, (type));                          \
        struct call c = {(void *)real_##name, (void *)p};  \
        reprise_lock_with((const void *)p, call1, &c);     \
    }
#define UNLOCK1(name, type)                                \
    void name(type p)                                      \
    {                                                      \
        REAL(void, name, (type));                          \
        struct call c = {(void *)real_##name, (void *)p};  \
        reprise_unlock_with(call1, &c);                    \
    }
LOCK0(GOMP_critical_start, &critical_obj)
UNLOCK0(GOMP_critical_end)
LOCK0(GOMP_atomic_start, &atomic_obj)
UNLOCK0(GOMP_atomic_end)
LOCK1(GOMP_critical_name_start, void **)
UNLOCK1(GOMP_critical_name_end, void **)
LOCK1(omp_set_lock, void *)
UNLOCK1(omp_unset_lock, void *)
LOCK1(omp_set_nest_lock, void *)
UNLOCK1(omp_unset_nest_lock, void *)

/* omp_test_lock: 1 when taken (recorded; a replayed success takes the lock for real). */
struct test_set { ifn1 test; fn1 set; void *l; };
static int test_once(void *p) { struct test_set *x = p; return x->test(x->l); }
static void set_now(void *p) { struct test_set *x = p; x->set(x->l); }
int omp_test_lock(void *l)
{
    REAL(int, omp_test_lock, (void *));
    REAL(void, omp_set_lock, (void *));
    struct test_set x = {real_omp_test_lock, real_omp_set_lock, l};
    return reprise_try_lock_with(l, test_once, set_now, &x) ? 1 : 0;
}

/* ---- chunks of dynamic, guided and runtime schedules ------------------------------------ */
typedef unsigned long long ull;
/* The chunk a call took (its result, first and end iterations): recorded; given back in replay.
 * A `_next` is not performed in replay (no thread's is: libgomp's counter is not consulted);
 * a `_start` is, for its share of the team's bookkeeping, its chunk replaced. Holding a turn
 * across the real call instead deadlocked: a `_start` may wait inside libgomp for another
 * thread of the team, which waited for the turn. */
#define CHUNK(name, params, args, type, s, e, perform)                           \
    bool name params                                                             \
    {                                                                            \
        REAL(bool, name, params);                                                \
        if (!reprise_active()) return real_##name args;                          \
        bool r = false;                                                          \
        if ((perform) || !reprise_io_replaying()) r = real_##name args;          \
        r = (bool)reprise_input((uint64_t)r);                                    \
        if (r) {                                                                 \
            *(s) = (type)reprise_input((uint64_t) * (s));                        \
            *(e) = (type)reprise_input((uint64_t) * (e));                        \
        }                                                                        \
        return r;                                                                \
    }
#define NEXT(name) CHUNK(name, (long *s, long *e), (s, e), long, s, e, 0)
#define NEXT_ULL(name) CHUNK(name, (ull *s, ull *e), (s, e), ull, s, e, 0)
#define START_CHUNK(name) \
    CHUNK(name, (long b, long en, long in, long c, long *s, long *e), (b, en, in, c, s, e), long, s, e, 1)
#define START_RUNTIME(name) \
    CHUNK(name, (long b, long en, long in, long *s, long *e), (b, en, in, s, e), long, s, e, 1)
#define START_CHUNK_ULL(name)                                                                  \
    CHUNK(name, (bool up, ull b, ull en, ull in, ull c, ull *s, ull *e), (up, b, en, in, c, s, e), ull, s, \
          e, 1)
#define START_RUNTIME_ULL(name) \
    CHUNK(name, (bool up, ull b, ull en, ull in, ull *s, ull *e), (up, b, en, in, s, e), ull, s, e, 1)
NEXT(GOMP_loop_dynamic_next)
NEXT(GOMP_loop_guided_next)
NEXT(GOMP_loop_runtime_next)
NEXT(GOMP_loop_nonmonotonic_dynamic_next)
NEXT(GOMP_loop_nonmonotonic_guided_next)
NEXT(GOMP_loop_nonmonotonic_runtime_next)
NEXT(GOMP_loop_maybe_nonmonotonic_runtime_next)
NEXT_ULL(GOMP_loop_ull_dynamic_next)
NEXT_ULL(GOMP_loop_ull_guided_next)
NEXT_ULL(GOMP_loop_ull_runtime_next)
NEXT_ULL(GOMP_loop_ull_nonmonotonic_dynamic_next)
NEXT_ULL(GOMP_loop_ull_nonmonotonic_guided_next)
NEXT_ULL(GOMP_loop_ull_nonmonotonic_runtime_next)
NEXT_ULL(GOMP_loop_ull_maybe_nonmonotonic_runtime_next)
START_CHUNK(GOMP_loop_dynamic_start)
START_CHUNK(GOMP_loop_guided_start)
START_CHUNK(GOMP_loop_nonmonotonic_dynamic_start)
START_CHUNK(GOMP_loop_nonmonotonic_guided_start)
START_RUNTIME(GOMP_loop_runtime_start)
START_RUNTIME(GOMP_loop_nonmonotonic_runtime_start)
START_RUNTIME(GOMP_loop_maybe_nonmonotonic_runtime_start)
START_CHUNK_ULL(GOMP_loop_ull_dynamic_start)
START_CHUNK_ULL(GOMP_loop_ull_guided_start)
START_CHUNK_ULL(GOMP_loop_ull_nonmonotonic_dynamic_start)
START_CHUNK_ULL(GOMP_loop_ull_nonmonotonic_guided_start)
START_RUNTIME_ULL(GOMP_loop_ull_runtime_start)
START_RUNTIME_ULL(GOMP_loop_ull_nonmonotonic_runtime_start)
START_RUNTIME_ULL(GOMP_loop_ull_maybe_nonmonotonic_runtime_start)
/* The generic start of gcc 9 and later (any schedule; its reductions and memory arguments
 * passed through). */
CHUNK(GOMP_loop_start,
      (long b, long en, long in, long sched, long c, long *s, long *e, uintptr_t *red, void **mem),
      (b, en, in, sched, c, s, e, red, mem), long, s, e, 1)
CHUNK(GOMP_loop_ull_start,
      (bool up, ull b, ull en, ull in, long sched, ull c, ull *s, ull *e, uintptr_t *red, void **mem),
      (up, b, en, in, sched, c, s, e, red, mem), ull, s, e, 1)

/* Which thread runs a `single` construct, and which section a thread of a `sections`
 * construct runs next (libgomp decides by atomic operations): recorded, given back in replay
 * (the starts performed for the team's bookkeeping, `GOMP_sections_next` not). */
RECORDED_VALUE(bool, GOMP_single_start, (void), (), 1)
RECORDED_VALUE(unsigned, GOMP_sections_start, (unsigned count), (count), 1)
RECORDED_VALUE(unsigned, GOMP_sections2_start, (unsigned count, uintptr_t *red, void **mem), (count, red, mem), 1)
RECORDED_VALUE(unsigned, GOMP_sections_next, (void), (), 0)

/* The C interposers of this file (weak: a program may define these names itself). */
#pragma weak GOMP_critical_start
#pragma weak GOMP_critical_end
#pragma weak GOMP_atomic_start
#pragma weak GOMP_atomic_end
#pragma weak GOMP_critical_name_start
#pragma weak GOMP_critical_name_end
#pragma weak omp_set_lock
#pragma weak omp_unset_lock
#pragma weak omp_set_nest_lock
#pragma weak omp_unset_nest_lock
#pragma weak omp_test_lock
#pragma weak GOMP_loop_dynamic_next
#pragma weak GOMP_loop_guided_next
#pragma weak GOMP_loop_runtime_next
#pragma weak GOMP_loop_nonmonotonic_dynamic_next
#pragma weak GOMP_loop_nonmonotonic_guided_next
#pragma weak GOMP_loop_nonmonotonic_runtime_next
#pragma weak GOMP_loop_maybe_nonmonotonic_runtime_next
#pragma weak GOMP_loop_ull_dynamic_next
#pragma weak GOMP_loop_ull_guided_next
#pragma weak GOMP_loop_ull_runtime_next
#pragma weak GOMP_loop_ull_nonmonotonic_dynamic_next
#pragma weak GOMP_loop_ull_nonmonotonic_guided_next
#pragma weak GOMP_loop_ull_nonmonotonic_runtime_next
#pragma weak GOMP_loop_ull_maybe_nonmonotonic_runtime_next
#pragma weak GOMP_loop_dynamic_start
#pragma weak GOMP_loop_guided_start
#pragma weak GOMP_loop_nonmonotonic_dynamic_start
#pragma weak GOMP_loop_nonmonotonic_guided_start
#pragma weak GOMP_loop_runtime_start
#pragma weak GOMP_loop_nonmonotonic_runtime_start
#pragma weak GOMP_loop_maybe_nonmonotonic_runtime_start
#pragma weak GOMP_loop_ull_dynamic_start
#pragma weak GOMP_loop_ull_guided_start
#pragma weak GOMP_loop_ull_nonmonotonic_dynamic_start
#pragma weak GOMP_loop_ull_nonmonotonic_guided_start
#pragma weak GOMP_loop_ull_runtime_start
#pragma weak GOMP_loop_ull_nonmonotonic_runtime_start
#pragma weak GOMP_loop_ull_maybe_nonmonotonic_runtime_start
#pragma weak GOMP_loop_start
#pragma weak GOMP_loop_ull_start
#pragma weak GOMP_single_start
#pragma weak GOMP_sections_start
#pragma weak GOMP_sections2_start
#pragma weak GOMP_sections_next
