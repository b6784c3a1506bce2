/* list_dir.c - two threads each list the directory argv[1] (default ".") with
 * opendir/readdir, one of them twice (rewinddir between); main prints, per thread, how many
 * entries it saw and their names in sorted order, then lists the directory with scandir (a
 * filter of its own, alphasort) and prints that. The output depends on what the directory
 * holds when the program runs. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dir = ".";

struct listing {
    int n;
    char names[64][256];
};
static struct listing seen[2];

static int by_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void *list(void *arg)
{
    long i = (long)arg;
    struct listing *l = &seen[i];
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    for (int pass = 0; pass <= i; pass++) {
        if (pass > 0)
            rewinddir(d);
        l->n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (l->n < 64 && e->d_name[0] != '.')
                snprintf(l->names[l->n++], 256, "%s", e->d_name);
    }
    closedir(d);
    qsort(l->names, (size_t)l->n, sizeof l->names[0], by_name);
    return NULL;
}

static int visible(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

int main(int argc, char **argv)
{
    if (argc > 1)
        dir = argv[1];
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, list, (void *)i);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        printf("thread %d: %d entries:", i, seen[i].n);
        for (int k = 0; k < seen[i].n; k++)
            printf(" %s", seen[i].names[k]);
        printf("\n");
    }
    struct dirent **l;
    int n = scandir(dir, &l, visible, alphasort);
    printf("scandir: %d entries:", n);
    for (int k = 0; k < n; k++) {
        printf(" %s", l[k]->d_name);
        free(l[k]);
    }
    printf("\n");
    if (n >= 0)
        free(l);
    return 0;
}
