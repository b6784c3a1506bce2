/* The instrumentation floor for `reprise bench`.
 *
 * Every ThreadSanitizer callback that gcc 12 and clang 14 emit, doing nothing beyond what the
 * program needs to stay correct: plain-access callbacks are empty, atomic callbacks perform
 * their operation (sequentially consistent, at least as strong as asked), and the __tsan_mem*
 * helpers copy. A program compiled like `reprise cc` does and linked against this archive
 * (offered to gcc as libtsan.a) pays only for the calls themselves, which is the least any
 * compiler-instrumentation recorder can cost. `reprise bench` compiles it at bench time with
 * plain `gcc -O2 -c` and archives it; it is never linked into anything else.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SC __ATOMIC_SEQ_CST

void __tsan_init(void) {}
void __tsan_func_entry(void *pc) { (void)pc; }
void __tsan_func_exit(void) {}
void __tsan_ignore_thread_begin(void) {}
void __tsan_ignore_thread_end(void) {}

#define PLAIN(n)                                              \
    void __tsan_read##n(void *a) { (void)a; }                 \
    void __tsan_write##n(void *a) { (void)a; }                \
    void __tsan_unaligned_read##n(void *a) { (void)a; }       \
    void __tsan_unaligned_write##n(void *a) { (void)a; }      \
    void __tsan_volatile_read##n(void *a) { (void)a; }        \
    void __tsan_volatile_write##n(void *a) { (void)a; }       \
    void __tsan_read_write##n(void *a) { (void)a; }           \
    void __tsan_unaligned_read_write##n(void *a) { (void)a; }
PLAIN(1)
PLAIN(2)
PLAIN(4)
PLAIN(8)
PLAIN(16)

void __tsan_read_range(void *a, size_t n) { (void)a; (void)n; }
void __tsan_write_range(void *a, size_t n) { (void)a; (void)n; }
void __tsan_vptr_update(void **a, void *v) { (void)a; (void)v; }
void __tsan_vptr_read(void **a) { (void)a; }

void *__tsan_memcpy(void *d, const void *s, size_t n) { return memcpy(d, s, n); }
void *__tsan_memmove(void *d, const void *s, size_t n) { return memmove(d, s, n); }
void *__tsan_memset(void *d, int c, size_t n) { return memset(d, c, n); }

void __tsan_atomic_thread_fence(int mo) { (void)mo; __atomic_thread_fence(SC); }
void __tsan_atomic_signal_fence(int mo) { (void)mo; __atomic_signal_fence(SC); }

#define ATOMICS(n, T)                                                                          \
    T __tsan_atomic##n##_load(T *a, int mo) { (void)mo; return __atomic_load_n(a, SC); }       \
    void __tsan_atomic##n##_store(T *a, T v, int mo) { (void)mo; __atomic_store_n(a, v, SC); } \
    T __tsan_atomic##n##_exchange(T *a, T v, int mo) { (void)mo; return __atomic_exchange_n(a, v, SC); } \
    T __tsan_atomic##n##_fetch_add(T *a, T v, int mo) { (void)mo; return __atomic_fetch_add(a, v, SC); } \
    T __tsan_atomic##n##_fetch_sub(T *a, T v, int mo) { (void)mo; return __atomic_fetch_sub(a, v, SC); } \
    T __tsan_atomic##n##_fetch_and(T *a, T v, int mo) { (void)mo; return __atomic_fetch_and(a, v, SC); } \
    T __tsan_atomic##n##_fetch_or(T *a, T v, int mo) { (void)mo; return __atomic_fetch_or(a, v, SC); }   \
    T __tsan_atomic##n##_fetch_xor(T *a, T v, int mo) { (void)mo; return __atomic_fetch_xor(a, v, SC); } \
    T __tsan_atomic##n##_fetch_nand(T *a, T v, int mo) { (void)mo; return __atomic_fetch_nand(a, v, SC); } \
    int __tsan_atomic##n##_compare_exchange_strong(T *a, T *c, T v, int mo, int fmo) {         \
        (void)mo; (void)fmo; return __atomic_compare_exchange_n(a, c, v, 0, SC, SC);            \
    }                                                                                          \
    int __tsan_atomic##n##_compare_exchange_weak(T *a, T *c, T v, int mo, int fmo) {           \
        (void)mo; (void)fmo; return __atomic_compare_exchange_n(a, c, v, 1, SC, SC);            \
    }                                                                                          \
    T __tsan_atomic##n##_compare_exchange_val(T *a, T c, T v, int mo, int fmo) {               \
        (void)mo; (void)fmo; __atomic_compare_exchange_n(a, &c, v, 0, SC, SC); return c;        \
    }
ATOMICS(8, uint8_t)
ATOMICS(16, uint16_t)
ATOMICS(32, uint32_t)
ATOMICS(64, uint64_t)

/* 128-bit atomics under a private spinlock (no libatomic, no -mcx16 needed), like the runtime. */
typedef unsigned __int128 u128;
static char lock128;
static void lk(void) { while (__atomic_test_and_set(&lock128, __ATOMIC_ACQUIRE)) {} }
static void ulk(void) { __atomic_clear(&lock128, __ATOMIC_RELEASE); }
#define RMW128(name, expr)                                          \
    u128 __tsan_atomic128_##name(volatile u128 *a, u128 v, int mo) { \
        (void)mo; lk(); u128 o = *a; *a = (expr); ulk(); return o;  \
    }
RMW128(exchange, v)
RMW128(fetch_add, o + v)
RMW128(fetch_sub, o - v)
RMW128(fetch_and, o & v)
RMW128(fetch_or, o | v)
RMW128(fetch_xor, o ^ v)
RMW128(fetch_nand, ~(o & v))
u128 __tsan_atomic128_load(volatile u128 *a, int mo) { (void)mo; lk(); u128 o = *a; ulk(); return o; }
void __tsan_atomic128_store(volatile u128 *a, u128 v, int mo) { (void)mo; lk(); *a = v; ulk(); }
u128 __tsan_atomic128_compare_exchange_val(volatile u128 *a, u128 c, u128 v, int mo, int fmo) {
    (void)mo; (void)fmo; lk(); u128 o = *a; if (o == c) *a = v; ulk(); return o;
}
int __tsan_atomic128_compare_exchange_strong(volatile u128 *a, u128 *c, u128 v, int mo, int fmo) {
    u128 o = __tsan_atomic128_compare_exchange_val(a, *c, v, mo, fmo);
    if (o == *c) return 1;
    *c = o;
    return 0;
}
int __tsan_atomic128_compare_exchange_weak(volatile u128 *a, u128 *c, u128 v, int mo, int fmo) {
    return __tsan_atomic128_compare_exchange_strong(a, c, v, mo, fmo);
}
