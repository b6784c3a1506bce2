/* out_aliases.c - standard output written under other descriptors, and the offset of a file
 * the program wrote and removed: main writes a line with write(dup(1)), one through
 * open("/dev/stdout") and one with fprintf on fopen("/dev/stdout"); a thread writes a
 * temporary file of 100 bytes in the directory argv[1] (default "."), reopens it read-only,
 * asks its size with lseek(SEEK_END) and removes it; main prints that size last. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *dir = ".";
static long size = -1;

static void *temp_size(void *arg)
{
    (void)arg;
    char path[4096], buf[100];
    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/out_aliases.tmp", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, buf, sizeof buf) != (long)sizeof buf)
        return NULL;
    close(fd);
    fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    size = (long)lseek(fd, 0, SEEK_END);
    close(fd);
    unlink(path);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        dir = argv[1];
    pthread_t t;
    pthread_create(&t, NULL, temp_size, NULL);
    int d = dup(1);
    if (d < 0 || write(d, "through dup(1)\n", 15) != 15)
        return 3;
    close(d);
    int o = open("/dev/stdout", O_WRONLY);
    if (o < 0 || write(o, "through /dev/stdout\n", 20) != 20)
        return 4;
    close(o);
    FILE *f = fopen("/dev/stdout", "w");
    if (!f)
        return 5;
    fprintf(f, "through fopen(/dev/stdout)\n");
    fclose(f);
    pthread_join(t, NULL);
    printf("temporary file size %ld\n", size);
    return 0;
}
