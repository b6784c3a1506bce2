/* shim_ipc.c: System V shared memory. shmget's identifier is the kernel's choice, a new one at
 * every IPC_PRIVATE call, and another in the replay (fio keeps it in its thread segments and
 * the replay read 18 where the recording had 17: diverged in every replay). shmget is
 * performed in both runs and the program gets the recorded identifier; the replay's own is
 * kept beside it, and shmat and shmctl act on the segment the replay created. The address
 * shmat gives is the kernel's, the same in both runs (no ASLR). Both modes. */
#include "shim.h"
#include <sys/ipc.h>
#include <sys/shm.h>

#define SHM_IDS 64
/* Recorded identifier -> the replay's, for the segments whose two differ (replay only). */
static struct {
    int rec, real;
} shm_ids[SHM_IDS];
static int shm_n;
static int shm_lock;

/* The replay's identifier for the program's `id` (itself when the two agree). */
static int shm_real(int id)
{
    int r = id;
    shim_lock(&shm_lock);
    for (int i = 0; i < shm_n; i++)
        if (shm_ids[i].rec == id) r = shm_ids[i].real;
    shim_unlock(&shm_lock);
    return r;
}

int shmget(key_t key, size_t size, int flg)
{
    REAL(int, shmget, (key_t, size_t, int));
    if (!reprise_active()) return real_shmget(key, size, flg);
    reprise_safe_point();
    int r = real_shmget(key, size, flg);
    int e = errno;
    int rec = (int)reprise_shim_io_result(r, e);
    if (reprise_io_replaying() && rec >= 0 && r >= 0 && rec != r) {
        shim_lock(&shm_lock);
        /* A full table keeps the oldest pairs: a later segment's calls then fail as a
         * missing one would, and the replay diverges where the program sees it. */
        if (shm_n < SHM_IDS) shm_ids[shm_n].rec = rec, shm_ids[shm_n++].real = r;
        shim_unlock(&shm_lock);
    }
    return rec;
}

void *shmat(int id, const void *addr, int flg)
{
    REAL(void *, shmat, (int, const void *, int));
    if (!reprise_active()) return real_shmat(id, addr, flg);
    return real_shmat(shm_real(id), addr, flg);
}

int shmctl(int id, int cmd, struct shmid_ds *buf)
{
    REAL(int, shmctl, (int, int, struct shmid_ds *));
    if (!reprise_active()) return real_shmctl(id, cmd, buf);
    return real_shmctl(shm_real(id), cmd, buf);
}

#pragma weak shmget
#pragma weak shmat
#pragma weak shmctl
