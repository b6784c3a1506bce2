/* file_store.c - the file handling of a small database in the directory argv[1] (default
 * "."), as leveldb does it: lock a LOCK file opened O_RDWR|O_CREAT with fcntl(F_SETLK) and
 * lockf, ask with access() whether CURRENT exists (a new store writes it; an existing one reads
 * it), write a table file, size it (ftruncate, posix_fallocate), sync it (fsync, fdatasync),
 * reopen it read-only and map it shared while two threads sum its halves through the mapping,
 * ask its size with statx and read a link to it, then remove both (as compaction does). A log
 * file opened O_RDWR is mapped shared and writable; the two threads fill its halves, msync,
 * and main sums it back. Main prints what it found.
 * Every failed call is printed with its errno and ends the program with status 3. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TABLE 300000
#define LOG 65536

static const unsigned char *table;
static unsigned char *logmap;
static unsigned long sums[2];

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("%s failed: errno %d\n", what, errno);
        exit(3);
    }
}

static void *half(void *arg)
{
    long i = (long)arg;
    unsigned long s = 0;
    for (long k = i * (TABLE / 2); k < (i + 1) * (TABLE / 2); k++)
        s += table[k] * (unsigned long)(k % 7 + 1);
    sums[i] = s;
    for (long k = i * (LOG / 2); k < (i + 1) * (LOG / 2); k++)
        logmap[k] = (unsigned char)(s + (unsigned long)k);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    check(chdir(dir) == 0, "chdir");
    int lock = open("LOCK", O_RDWR | O_CREAT, 0644);
    check(lock >= 0, "open LOCK");
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    check(fcntl(lock, F_SETLK, &fl) == 0, "fcntl F_SETLK");
    check(lockf(lock, F_TLOCK, 0) == 0, "lockf");
    check(flock(lock, LOCK_EX | LOCK_NB) == 0, "flock");

    int fresh = access("CURRENT", F_OK) != 0;
    char current[64] = "";
    if (fresh) {
        FILE *f = fopen("CURRENT", "w");
        check(f != NULL, "fopen CURRENT");
        fputs("table-000001\n", f);
        check(fclose(f) == 0, "fclose CURRENT");
        snprintf(current, sizeof current, "table-000001");
    } else {
        FILE *f = fopen("CURRENT", "r");
        check(f != NULL && fgets(current, sizeof current, f) != NULL, "read CURRENT");
        fclose(f);
        current[strcspn(current, "\n")] = 0;
    }

    unsigned char *buf = malloc(TABLE);
    unsigned x = 12345;
    for (int k = 0; k < TABLE; k++) {
        x = x * 1103515245u + 12345u;
        buf[k] = (unsigned char)(x >> 16);
    }
    int t = open("table.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    check(t >= 0, "open table");
    check(write(t, buf, TABLE) == TABLE, "write table");
    check(fdatasync(t) == 0, "fdatasync");
    check(fsync(t) == 0, "fsync");
    check(close(t) == 0, "close table");
    t = open("table.tmp", O_RDWR);
    check(t >= 0, "reopen table");
    check(posix_fallocate(t, 0, TABLE) == 0, "posix_fallocate");
    check(ftruncate(t, TABLE) == 0, "ftruncate");
    check(close(t) == 0, "close table");
    t = open("table.tmp", O_RDONLY);
    check(t >= 0, "open table to map");
    table = mmap(NULL, TABLE, PROT_READ, MAP_SHARED, t, 0);
    check(table != MAP_FAILED, "mmap table");
    close(t);

    int lg = open("LOG", O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(lg >= 0, "open LOG");
    check(ftruncate(lg, LOG) == 0, "ftruncate LOG");
    logmap = mmap(NULL, LOG, PROT_READ | PROT_WRITE, MAP_SHARED, lg, 0);
    check(logmap != MAP_FAILED, "mmap LOG");

    pthread_t th[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, half, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    check(msync(logmap, LOG, MS_SYNC) == 0, "msync");
    unsigned long logsum = 0;
    for (int k = 0; k < LOG; k++)
        logsum += logmap[k];
    munmap(logmap, LOG);
    munmap((void *)table, TABLE);
    close(lg);
    struct statx sx;
    check(statx(AT_FDCWD, "table.tmp", 0, STATX_SIZE, &sx) == 0, "statx table");
    char target[64] = "";
    check(symlink("table.tmp", "table.link") == 0, "symlink");
    check(readlink("table.link", target, sizeof target - 1) == 9 && strcmp(target, "table.tmp") == 0, "readlink");
    check(unlink("table.link") == 0, "unlink link");
    check(unlink("table.tmp") == 0, "unlink table");
    check(unlink("LOG") == 0, "unlink LOG");
    fl.l_type = F_UNLCK;
    check(fcntl(lock, F_SETLK, &fl) == 0, "fcntl F_UNLCK");
    close(lock);
    printf("%s store %s: table of %llu bytes, sums %lu %lu, log sum %lu\n", fresh ? "new" : "existing", current,
           (unsigned long long)sx.stx_size, sums[0], sums[1], logsum);
    free(buf);
    return 0;
}
