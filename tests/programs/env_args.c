/* env_args.c - prints its arguments, one environment variable (REPRISE_PROBE) and whether
 * PATH and HOME are set, from main and from a thread. Native, recorded and replayed runs must
 * print the same (tests/io.rs): a runtime starting inside the program's .preinit_array once
 * left the program with no environment at all. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *probe(void *a)
{
    const char *v = getenv("REPRISE_PROBE");
    printf("thread: REPRISE_PROBE=%s\n", v ? v : "(unset)");
    return a;
}

int main(int argc, char **argv)
{
    printf("argc %d:", argc);
    for (int i = 0; i < argc; i++) printf(" [%s]", i == 0 ? "prog" : argv[i]);
    const char *v = getenv("REPRISE_PROBE");
    printf("\nmain: REPRISE_PROBE=%s PATH %s HOME %s\n", v ? v : "(unset)",
           getenv("PATH") ? "set" : "unset", getenv("HOME") ? "set" : "unset");
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, 0, probe, 0);
    pthread_join(t, 0);
    return 0;
}
