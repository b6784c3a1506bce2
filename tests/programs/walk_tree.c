/* walk_tree.c - main walks the tree argv[1] (default ".") with nftw and hands each regular
 * file's path to a reader thread through a one-slot queue (mutex and condition variables: the
 * walk's callback waits while the reader is busy); the reader opens each file with fopen and
 * adds up its bytes. Meanwhile a third thread counts the tree's top entries with glob. Main
 * prints the number of files, the sum of their bytes and sizes, and glob's count. The output
 * depends on what the tree holds when the program runs. */
#define _GNU_SOURCE
#include <ftw.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static char slot[4096];
static int full, done;
static long files, total;
static int globbed = -1;

static int visit(const char *p, const struct stat *st, int type, struct FTW *f)
{
    (void)f;
    if (type != FTW_F)
        return 0;
    pthread_mutex_lock(&mu);
    while (full)
        pthread_cond_wait(&changed, &mu);
    snprintf(slot, sizeof slot, "%s", p);
    full = 1;
    total += st->st_size;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mu);
    return 0;
}

static void *reader(void *arg)
{
    (void)arg;
    for (;;) {
        char path[4096];
        pthread_mutex_lock(&mu);
        while (!full && !done)
            pthread_cond_wait(&changed, &mu);
        if (!full) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        snprintf(path, sizeof path, "%s", slot);
        pthread_mutex_unlock(&mu);
        long sum = 0;
        FILE *fp = fopen(path, "r");
        if (fp) {
            int c;
            while ((c = fgetc(fp)) != EOF)
                sum += c;
            fclose(fp);
        }
        pthread_mutex_lock(&mu);
        files++;
        total += sum;
        full = 0;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&mu);
    }
}

static void *globber(void *arg)
{
    glob_t g;
    if (glob(arg, 0, NULL, &g) == 0) {
        globbed = (int)g.gl_pathc;
        globfree(&g);
    } else {
        globbed = 0;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/*", dir);
    pthread_t r, g;
    pthread_create(&r, NULL, reader, NULL);
    pthread_create(&g, NULL, globber, pattern);
    int walked = nftw(dir, visit, 8, FTW_PHYS);
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mu);
    pthread_join(r, NULL);
    pthread_join(g, NULL);
    printf("walk %d: %ld files, total %ld; glob %d\n", walked, files, total, globbed);
    return 0;
}
