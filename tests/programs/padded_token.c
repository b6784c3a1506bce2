/* padded_token.c - a 16-byte record (a pointer and a length: 4 bytes of padding) stored field
 * by field into an uninitialised stack array and then copied whole, as a parser's value stack
 * is (SQLite's Token): one 16-byte load and store whose padding is whatever earlier calls left
 * on the stack, calls that enter the runtime (a lock, malloc, a clock read, a write) in
 * between. Prints the sum of the copied lengths. Deterministic. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

struct token {
    const char *text;
    unsigned len;
};
struct slot {
    unsigned short state;
    struct token tok;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void busy_stack(void)
{
    struct timeval tv;
    pthread_mutex_lock(&lock);
    void *p = malloc(64);
    gettimeofday(&tv, NULL);
    pthread_mutex_unlock(&lock);
    free(p);
    if (write(-1, "", 0) > 0)
        abort();
}

__attribute__((noinline)) static void push(struct slot *s, const char *text, unsigned len)
{
    s->tok.text = text;
    s->tok.len = len;
}

__attribute__((noinline)) static unsigned fold(struct slot *top)
{
    top[-1].tok = top[0].tok;
    return top[-1].tok.len;
}

__attribute__((noinline)) static unsigned parse(const char *text)
{
    struct slot stack[64];
    unsigned sum = 0;
    for (int i = 0; text[i] && i < 63; i++) {
        push(&stack[i + 1], text + i, (unsigned)i);
        sum += fold(&stack[i + 1]);
    }
    return sum;
}

int main(void)
{
    unsigned total = 0;
    for (int round = 0; round < 20; round++) {
        busy_stack();
        total += parse("create table t(a); select a from t;");
    }
    printf("total %u\n", total);
    return 0;
}
