/* counter.c - a racy shared counter (part of libwork.a). */
#include "work.h"

static volatile int counter;  /* plain shared int, no lock */
static int window = 3000;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

void counter_set_window(int n)
{
    window = n;
}

void counter_bump(void)
{
    int tmp = counter;  /* read */
    delay(window);      /* race window */
    counter = tmp + 1;  /* write */
}

int counter_value(void)
{
    return counter;
}
