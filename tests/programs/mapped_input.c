/* mapped_input.c - input read through mmap, as parsers of large data sets do: main maps
 * standard input (a regular file) and the file argv[1] (default mapped_input.input) with
 * mmap, two threads hash alternate bytes of each mapping; prints sizes and hashes. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct map {
    const unsigned char *p;
    size_t n;
    unsigned long h[2];
};
static struct map maps[2];

static void *hash(void *arg)
{
    long i = (long)arg;
    for (int m = 0; m < 2; m++) {
        unsigned long h = 14695981039346656037UL;
        for (size_t k = (size_t)i; k < maps[m].n; k += 2)
            h = (h ^ maps[m].p[k]) * 1099511628211UL;
        maps[m].h[i] = h;
    }
    return NULL;
}

static int map(int fd, struct map *m)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return -1;
    m->n = (size_t)st.st_size;
    m->p = mmap(NULL, m->n, PROT_READ, MAP_PRIVATE, fd, 0);
    return m->p == MAP_FAILED ? -1 : 0;
}

int main(int argc, char **argv)
{
    int fd = open(argc > 1 ? argv[1] : "mapped_input.input", O_RDONLY);
    if (map(0, &maps[0]) != 0 || fd < 0 || map(fd, &maps[1]) != 0) {
        puts("stdin and the file must be non-empty regular files");
        return 1;
    }
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, hash, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int m = 0; m < 2; m++)
        printf("%s %zu bytes %lx %lx\n", m ? "file" : "stdin", maps[m].n, maps[m].h[0], maps[m].h[1]);
    return 0;
}
