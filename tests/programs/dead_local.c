/* dead_local.c - the last plain access before a libc call is a store to a local of a frame
 * that has returned: fill() stores a struct sigaction on a stack made deeper by argv[1] bytes
 * (default 240) of alloca, then main calls sysconf, whose interposer resolves libc's sysconf
 * with dlsym on this first call; dlsym's __sigsetjmp writes random (pointer-mangled) words
 * over that dead slot. Prints whether sysconf found memory. Deterministic. */
#include <alloca.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void on_alarm(int s)
{
    (void)s;
}

__attribute__((noinline)) static void fill(void)
{
    struct sigaction sa;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
}

__attribute__((noinline)) static void deeper(int n)
{
    char *p = alloca(n);
    __asm__ volatile("" ::"r"(p) : "memory");
    fill();
}

long found;

int main(int argc, char **argv)
{
    deeper(argc > 1 ? atoi(argv[1]) : 240);
    found = sysconf(_SC_PHYS_PAGES) > 0;
    printf("memory found: %ld\n", found);
    return 0;
}
