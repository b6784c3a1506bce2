/* kernel_random.c - random bytes from the kernel through glibc's arc4random family (2.36),
 * getentropy and getrandom, which libc fills with the getrandom system call, and that system
 * call made with syscall() (as OpenSSL does): two threads each draw with all of them; main prints what each drew, in thread order. Every run prints
 * other numbers. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint32_t drawn[2][7];

static void *draw(void *arg)
{
    uint32_t *d = arg;
    d[0] = arc4random();
    d[1] = arc4random_uniform(1000);
    arc4random_buf(&d[2], sizeof d[2]);
    if (getentropy(&d[3], sizeof d[3]) != 0)
        d[3] = 0;
    if (getrandom(&d[4], sizeof d[4], 0) != sizeof d[4])
        d[4] = 0;
    d[5] = arc4random();
    if (syscall(SYS_getrandom, &d[6], sizeof d[6], 0) != sizeof d[6])
        d[6] = 0;
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, draw, drawn[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        printf("thread %d:", i);
        for (int k = 0; k < 7; k++)
            printf(" %u", drawn[i][k]);
        printf("\n");
    }
    return 0;
}
