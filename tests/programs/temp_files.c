/* temp_files.c - two threads each create a scratch file with mkstemp in the directory argv[1]
 * (default "."), write 400 KB into it, read it back, close and unlink it; meanwhile main
 * creates a scratch directory there with mkdtemp, writes a file into it and removes both; main
 * prints what each thread read back. Natively nothing is left in the directory. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir = ".";
static long sums[2];

static void *scratch(void *arg)
{
    long i = (long)arg;
    char name[4096];
    snprintf(name, sizeof name, "%s/scratch%ldXXXXXX", dir, i);
    int fd = mkstemp(name);
    if (fd < 0)
        return NULL;
    char buf[4096];
    memset(buf, 'a' + (int)i, sizeof buf);
    for (int k = 0; k < 100; k++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            return NULL;
    lseek(fd, 0, SEEK_SET);
    ssize_t n;
    long s = 0;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t j = 0; j < n; j++)
            s += buf[j];
    sums[i] = s;
    close(fd);
    unlink(name);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        dir = argv[1];
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, scratch, (void *)i);
    char d[4096], f[4200];
    snprintf(d, sizeof d, "%s/dirXXXXXX", dir);
    if (!mkdtemp(d))
        return 1;
    snprintf(f, sizeof f, "%s/note", d);
    FILE *fp = fopen(f, "w");
    if (!fp || fputs(d, fp) < 0 || fclose(fp) != 0)
        return 1;
    unlink(f);
    rmdir(d);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("read back %ld and %ld\n", sums[0], sums[1]);
    return 0;
}
