/* shim_omp.c: OpenMP's locks (libgomp's critical sections, atomic sections and omp_lock_t),
 * ordered like mutexes (sync.rs, reprise_lock_with). libgomp locks with its own futexes, which
 * no pthread interposer sees; unseen, a replay deadlocked: the thread that won a critical
 * section waited for an ownership edge from the thread blocked on it. Worksharing loops with
 * a static schedule need nothing (their iterations are computed from the thread number); the
 * dynamic and guided schedules, which libgomp hands out by atomic counters, are not ordered
 * here. A program without OpenMP never calls these (each real one is found on first use). */
#include "shim.h"

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
