/* shim_omp.c: OpenMP's locks (libgomp's critical sections, atomic sections and omp_lock_t),
 * ordered like mutexes (sync.rs, reprise_lock_with). libgomp locks with its own futexes, which
 * no pthread interposer sees; unseen, a replay deadlocked: the thread that won a critical
 * section waited for an ownership edge from the thread blocked on it. Worksharing loops with
 * a static schedule need nothing (their iterations are computed from the thread number); the
 * dynamic, guided and runtime schedules hand chunks out by atomic counters: the chunk each
 * call took is recorded and given back in replay (`ordered` loops too, whose blocks replay
 * orders by their accesses). Tasks run undeferred while recording and replaying. A program
 * without OpenMP never calls these (each real one is found on first use). */
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

/* omp_test_lock: 1 when taken (recorded; a replayed success takes the lock for real).
 * omp_test_nest_lock: the new nesting count when taken (recorded as well), 0 when not. */
struct test_set { ifn1 test; fn1 set; void *l; int r; };
static int test_once(void *p) { struct test_set *x = p; return x->r = x->test(x->l); }
static void set_now(void *p) { struct test_set *x = p; x->set(x->l); }
int omp_test_lock(void *l)
{
    REAL(int, omp_test_lock, (void *));
    REAL(void, omp_set_lock, (void *));
    struct test_set x = {real_omp_test_lock, real_omp_set_lock, l, 0};
    return reprise_try_lock_with(l, test_once, set_now, &x) ? 1 : 0;
}
int omp_test_nest_lock(void *l)
{
    REAL(int, omp_test_nest_lock, (void *));
    REAL(void, omp_set_nest_lock, (void *));
    struct test_set x = {real_omp_test_nest_lock, real_omp_set_nest_lock, l, 0};
    if (!reprise_try_lock_with(l, test_once, set_now, &x)) return 0;
    return (int)reprise_input((uint64_t)x.r);
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
/* `ordered` loops: the same. libgomp's ordered queue (whose `ordered` block runs next) follows
 * the order in which threads took their chunks and advances inside each `_next`; replay
 * performs no `_next`, so `GOMP_ordered_start` waits on that queue only while recording, and
 * the blocks are ordered like critical sections (below). Unrecorded, a replay hung: a thread
 * waited in `GOMP_ordered_start` for the one whose chunk came first in this run, which waited
 * for its recorded edge. Static chunks are recorded too (a static `_next` waits on the queue). */
NEXT(GOMP_loop_ordered_static_next)
NEXT(GOMP_loop_ordered_dynamic_next)
NEXT(GOMP_loop_ordered_guided_next)
NEXT(GOMP_loop_ordered_runtime_next)
NEXT_ULL(GOMP_loop_ull_ordered_static_next)
NEXT_ULL(GOMP_loop_ull_ordered_dynamic_next)
NEXT_ULL(GOMP_loop_ull_ordered_guided_next)
NEXT_ULL(GOMP_loop_ull_ordered_runtime_next)
START_CHUNK(GOMP_loop_ordered_static_start)
START_CHUNK(GOMP_loop_ordered_dynamic_start)
START_CHUNK(GOMP_loop_ordered_guided_start)
START_RUNTIME(GOMP_loop_ordered_runtime_start)
START_CHUNK_ULL(GOMP_loop_ull_ordered_static_start)
START_CHUNK_ULL(GOMP_loop_ull_ordered_dynamic_start)
START_CHUNK_ULL(GOMP_loop_ull_ordered_guided_start)
START_RUNTIME_ULL(GOMP_loop_ull_ordered_runtime_start)
/* The generic start of gcc 9 and later (any schedule; its reductions and memory arguments
 * passed through). */
CHUNK(GOMP_loop_start,
      (long b, long en, long in, long sched, long c, long *s, long *e, uintptr_t *red, void **mem),
      (b, en, in, sched, c, s, e, red, mem), long, s, e, 1)
CHUNK(GOMP_loop_ull_start,
      (bool up, ull b, ull en, ull in, long sched, ull c, ull *s, ull *e, uintptr_t *red, void **mem),
      (up, b, en, in, sched, c, s, e, red, mem), ull, s, e, 1)
CHUNK(GOMP_loop_ordered_start,
      (long b, long en, long in, long sched, long c, long *s, long *e, uintptr_t *red, void **mem),
      (b, en, in, sched, c, s, e, red, mem), long, s, e, 1)
CHUNK(GOMP_loop_ull_ordered_start,
      (bool up, ull b, ull en, ull in, long sched, ull c, ull *s, ull *e, uintptr_t *red, void **mem),
      (up, b, en, in, sched, c, s, e, red, mem), ull, s, e, 1)

/* An `ordered` block: ordered like a critical section (on one object), so that replay runs the
 * blocks in the recorded order in both modes. libgomp's own wait for this thread's place in
 * the ordered queue happens while recording only (see the `ordered` loops above). */
static char ordered_obj;
struct ordered { fn0 wait; bool replaying; };
static void ordered_wait(void *p)
{
    struct ordered *o = p;
    if (!o->replaying) o->wait();
}
void GOMP_ordered_start(void)
{
    REAL(void, GOMP_ordered_start, (void));
    if (!reprise_active_init()) {
        real_GOMP_ordered_start();
        return;
    }
    struct ordered o = {real_GOMP_ordered_start, reprise_io_replaying() != 0};
    reprise_lock_with(&ordered_obj, ordered_wait, &o);
}
UNLOCK0(GOMP_ordered_end)

/* ---- tasks ---------------------------------------------------------------------------------
 * Which thread runs a deferred task, and when, libgomp decides by timing (a task queue that
 * the team's threads serve, in its barriers and taskwaits, under its own locks). While
 * recording or replaying, every task is undeferred: run at once by the thread that creates
 * it, as an `if(0)` task, which OpenMP permits for any task and which libgomp runs in place
 * (copying the data with cpyfn, or arg_size bytes at arg_align, as for a deferred one).
 * Sibling tasks then run in their creation order, which satisfies every `depend` clause;
 * `taskwait` and the end of a `taskgroup` find nothing left to wait for. A task with a
 * `detach` clause stays as the program asked (its completion waits for an event that a later
 * task may fulfil). Unrecorded, a task's thread varied, and a recording could hang. */
#define TASK_FLAG_IF (1u << 10)     /* GOMP_TASK_FLAG_IF (gomp-constants.h): taskloop's if */
#define TASK_FLAG_DETACH (1u << 13) /* GOMP_TASK_FLAG_DETACH */
typedef void (*taskfn)(void *);
typedef void (*cpyfn_t)(void *, void *);
void GOMP_task(taskfn fn, void *data, cpyfn_t cpy, long size, long align, bool if_clause, unsigned flags,
               void **depend, int priority, void *detach)
{
    REAL(void, GOMP_task, (taskfn, void *, cpyfn_t, long, long, bool, unsigned, void **, int, void *));
    if (!(flags & TASK_FLAG_DETACH) && reprise_active_init()) if_clause = false;
    real_GOMP_task(fn, data, cpy, size, align, if_clause, flags, depend, priority, detach);
}
/* A taskloop's tasks: without its `if` flag libgomp runs them all in the calling thread, in
 * iteration order. */
#define TASKLOOP(name, type)                                                                          \
    void name(taskfn fn, void *data, cpyfn_t cpy, long size, long align, unsigned flags,               \
              unsigned long num_tasks, int priority, type start, type end, type step)                  \
    {                                                                                                  \
        REAL(void, name,                                                                               \
             (taskfn, void *, cpyfn_t, long, long, unsigned, unsigned long, int, type, type, type));    \
        if (reprise_active_init()) flags &= ~TASK_FLAG_IF;                                             \
        real_##name(fn, data, cpy, size, align, flags, num_tasks, priority, start, end, step);         \
    }
TASKLOOP(GOMP_taskloop, long)
TASKLOOP(GOMP_taskloop_ull, ull)

/* Which thread runs a `single` construct, and which section a thread of a `sections`
 * construct runs next (libgomp decides by atomic operations): recorded, given back in replay
 * (the starts performed for the team's bookkeeping, `GOMP_sections_next` not). */
RECORDED_VALUE(bool, GOMP_single_start, (void), (), 1)
RECORDED_VALUE(unsigned, GOMP_sections_start, (unsigned count), (count), 1)
RECORDED_VALUE(unsigned, GOMP_sections2_start, (unsigned count, uintptr_t *red, void **mem), (count, red, mem), 1)
RECORDED_VALUE(unsigned, GOMP_sections_next, (void), (), 0)

/* `single copyprivate`: libgomp's GOMP_single_copy_start lets the first thread to arrive run
 * the construct; the others wait in it (a team barrier) for the value GOMP_single_copy_end
 * hands out. That cannot be given back as a result (a thread that is not the runner waits in
 * the real call for the one that is), so the arrival order is replayed: while recording, each
 * call's outcome and its construct's number (runners counted as they arrive) are recorded; in
 * replay the recorded runner calls first and a waiting thread calls only once its construct's
 * runner has arrived. Unrecorded, a replay hung (another thread ran the construct). Only for
 * the outermost team (a nested team's constructs would share the count): deeper, unrecorded. */
static unsigned long copy_runs; /* level-1 copyprivate constructs whose runner has arrived */
void *GOMP_single_copy_start(void)
{
    REAL(void *, GOMP_single_copy_start, (void));
    REAL(int, omp_get_level, (void));
    if (!reprise_active_init() || real_omp_get_level() != 1) return real_GOMP_single_copy_start();
    if (!reprise_io_replaying()) {
        void *r = real_GOMP_single_copy_start();
        /* A waiting thread returns after its runner's GOMP_single_copy_end (a barrier), before
         * the next construct's runner can arrive: the count is its construct's number then. */
        unsigned long k = r ? __atomic_load_n(&copy_runs, __ATOMIC_ACQUIRE)
                            : __atomic_add_fetch(&copy_runs, 1, __ATOMIC_ACQ_REL);
        reprise_input(r == NULL);
        reprise_input(k);
        return r;
    }
    bool runs = reprise_input(0) != 0;
    unsigned long k = reprise_input(0);
    if (!runs) {
        reprise_safe_point(); /* nothing pending, requests granted while waiting */
        while (__atomic_load_n(&copy_runs, __ATOMIC_ACQUIRE) < k) raw_syscall3(SYS_sched_yield, 0, 0, 0);
    }
    void *r = real_GOMP_single_copy_start();
    if (runs) __atomic_store_n(&copy_runs, k, __ATOMIC_RELEASE);
    return r;
}

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
#pragma weak omp_test_nest_lock
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
#pragma weak GOMP_loop_ordered_static_next
#pragma weak GOMP_loop_ordered_dynamic_next
#pragma weak GOMP_loop_ordered_guided_next
#pragma weak GOMP_loop_ordered_runtime_next
#pragma weak GOMP_loop_ull_ordered_static_next
#pragma weak GOMP_loop_ull_ordered_dynamic_next
#pragma weak GOMP_loop_ull_ordered_guided_next
#pragma weak GOMP_loop_ull_ordered_runtime_next
#pragma weak GOMP_loop_ordered_static_start
#pragma weak GOMP_loop_ordered_dynamic_start
#pragma weak GOMP_loop_ordered_guided_start
#pragma weak GOMP_loop_ordered_runtime_start
#pragma weak GOMP_loop_ull_ordered_static_start
#pragma weak GOMP_loop_ull_ordered_dynamic_start
#pragma weak GOMP_loop_ull_ordered_guided_start
#pragma weak GOMP_loop_ull_ordered_runtime_start
#pragma weak GOMP_loop_ordered_start
#pragma weak GOMP_loop_ull_ordered_start
#pragma weak GOMP_ordered_start
#pragma weak GOMP_ordered_end
#pragma weak GOMP_task
#pragma weak GOMP_taskloop
#pragma weak GOMP_taskloop_ull
#pragma weak GOMP_single_start
#pragma weak GOMP_single_copy_start
#pragma weak GOMP_sections_start
#pragma weak GOMP_sections2_start
#pragma weak GOMP_sections_next
