/* popen_read.c - a thread reads a command's output through popen(cmd, "r") while main
 * counts; the command appends a line to popen_read.log (argv[1]) when it runs, and its
 * pipeline ends early (`seq ... | head -3`: seq dies of SIGPIPE, as under a shell). Prints
 * what the command printed, pclose's status and main's SIGPIPE disposition. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static char got[256];
static int status;
static const char *log_path = "popen_read.log";

static void *run(void *arg)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "echo ran >> %s; seq 1 1000000 | head -3; echo done; exit 3", log_path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return arg;
    char line[64];
    while (fgets(line, sizeof line, p))
        strncat(got, line, sizeof got - strlen(got) - 1);
    status = pclose(p);
    return arg;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        log_path = argv[1];
    pthread_t t;
    pthread_create(&t, NULL, run, NULL);
    volatile long n = 0;
    for (long i = 0; i < 100000; i++)
        n += i;
    pthread_join(t, NULL);
    struct sigaction sa;
    sigaction(SIGPIPE, NULL, &sa);
    printf("%sstatus %d\nSIGPIPE %s\nsum %ld\n", got, status,
           sa.sa_handler == SIG_IGN ? "ignored" : "default", (long)n);
    return 0;
}
