/* echo_server.c - loopback TCP echo server thread plus 3 client threads.
 * The server binds 127.0.0.1 port 0, learns the port with getsockname(),
 * and serves connections one at a time in accept order, echoing each
 * message back.  Each client connects, sends 4 numbered fixed-size
 * messages, reads each echo back in full, then closes.  The accept order
 * varies (argv[1] = delay-loop width before each client connects, scaled by
 * a fixed per-client factor).  Only main prints, after joining. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NCLIENTS 3
#define MSGS 4
#define MSGLEN 16

static int window = 20000;
static int port;                 /* published by the server */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static char accept_order[NCLIENTS + 1];
static char replies[NCLIENTS][MSGS][MSGLEN + 1];
static int errors;

static void delay(int n)
{
    for (int i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

static int read_full(int fd, char *buf, int len)
{
    int got = 0;
    while (got < len) {
        ssize_t r = read(fd, buf + got, (size_t)(len - got));
        if (r <= 0) return got;
        got += (int)r;
    }
    return got;
}

static int write_full(int fd, const char *buf, int len)
{
    int put = 0;
    while (put < len) {
        ssize_t w = write(fd, buf + put, (size_t)(len - put));
        if (w <= 0) return put;
        put += (int)w;
    }
    return put;
}

static void *server(void *arg)
{
    (void)arg;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, NCLIENTS) != 0) {
        perror("server setup");
        exit(1);
    }
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    pthread_mutex_lock(&mu);
    port = ntohs(a.sin_port);
    pthread_cond_broadcast(&ready);
    pthread_mutex_unlock(&mu);
    for (int c = 0; c < NCLIENTS; c++) {
        int s = accept(ls, NULL, NULL);
        if (s < 0) { errors++; continue; }
        char buf[MSGLEN];
        int first = 1;
        while (read_full(s, buf, MSGLEN) == MSGLEN) {
            if (first) { accept_order[c] = buf[1]; first = 0; }  /* "c<id> ..." */
            if (write_full(s, buf, MSGLEN) != MSGLEN) errors++;
        }
        close(s);
    }
    close(ls);
    return NULL;
}

static void *client(void *arg)
{
    int id = (int)(long)arg;
    pthread_mutex_lock(&mu);
    while (port == 0) pthread_cond_wait(&ready, &mu);
    int p = port;
    pthread_mutex_unlock(&mu);
    delay(window * ((id * 7) % 3 + 1));
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)p);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        exit(1);
    }
    for (int k = 0; k < MSGS; k++) {
        char msg[MSGLEN + 1];
        snprintf(msg, sizeof msg, "c%d msg %d ......", id, k);
        if (write_full(s, msg, MSGLEN) != MSGLEN) { errors++; break; }
        if (read_full(s, replies[id][k], MSGLEN) != MSGLEN) { errors++; break; }
        replies[id][k][MSGLEN] = '\0';
    }
    close(s);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) window = atoi(argv[1]);
    pthread_t srv, cl[NCLIENTS];
    pthread_create(&srv, NULL, server, NULL);
    for (long i = 0; i < NCLIENTS; i++) pthread_create(&cl[i], NULL, client, (void *)i);
    for (int i = 0; i < NCLIENTS; i++) pthread_join(cl[i], NULL);
    pthread_join(srv, NULL);
    for (int i = 0; i < NCLIENTS; i++) {
        printf("client %d got:", i);
        for (int k = 0; k < MSGS; k++) printf(" [%.8s]", replies[i][k]);
        printf("\n");
    }
    printf("server accept order (client ids): %s errors=%d\n", accept_order, errors);
    return 0;
}
