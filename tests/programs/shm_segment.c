/* shm_segment.c - a System V shared memory segment (shmget(IPC_PRIVATE), shmat, shmctl
 * IPC_RMID), as fio keeps its thread segments: the identifier, the kernel's choice, is kept
 * in a global and read back, and two threads update the segment under a lock. Prints the
 * segment's sum and whether the identifier still names it (IPC_STAT). */
#include <pthread.h>
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#define SZ (1 << 16)
static long *seg;
static int shm_id;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_lock(&mu);
        seg[(i * 7 + id + shm_id % 3) % (SZ / sizeof(long))] += i;
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

int main(void)
{
    shm_id = shmget(IPC_PRIVATE, SZ, IPC_CREAT | 0600);
    if (shm_id == -1) {
        perror("shmget");
        return 1;
    }
    seg = shmat(shm_id, NULL, 0);
    if (seg == (void *)-1) {
        perror("shmat");
        return 1;
    }
    struct shmid_ds ds;
    int stat_ok = shmctl(shm_id, IPC_STAT, &ds) == 0 && ds.shm_segsz == SZ;
    shmctl(shm_id, IPC_RMID, NULL);
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    long s = 0;
    for (size_t i = 0; i < SZ / sizeof(long); i++) s += seg[i];
    shmdt(seg);
    printf("sum %ld, id %s\n", s, stat_ok ? "names the segment" : "lost");
    return 0;
}
