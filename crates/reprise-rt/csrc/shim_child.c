/* shim_child.c: the processes a recorded program forks, and the pipes they write into.
 * A fork child runs unrecorded (lifecycle.rs), and runs again in replay; what it gives the
 * program is an outside input: the bytes it writes into a pipe the program reads (shim_fdio.c's
 * IO_PIPE class) and its status from the wait family, both recorded and given back in replay.
 * Replay keeps the children in step with the program, as they were while recording: each read
 * of such a pipe reads and drops what the child writes, up to the recorded count (to the end
 * of file for a recorded end of file), and each wait that reaped a child reaps the same child
 * (blocking until it ends). Before, replay read nothing: the program closed the pipe before the
 * child wrote, the child died of SIGPIPE, and waitpid gave the program another status
 * (`x=$(echo hi)` in bash; fork_pipe.c: about 4 replays in 10 diverged). */
#include "shim.h"
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* ---- pipes the program made (pipe, pipe2, popen), while recording -------------------------
 * A read of one of them that the program never wrote into (through an interposed write) reads
 * what another process wrote: a child, which replay runs again. A write into one whose read
 * end the program no longer holds feeds a child (`cmd < pipe`, popen(cmd, "w")): replay
 * performs it again, for the child that runs again (shim_fdio.c's OUT_CHILD). The most recent
 * NPIPES pipes; a read of an older one is a plain recorded read (replay then drains nothing),
 * a write into one is revocable. */
#define NPIPES 256
static struct { dev_t dev; ino_t ino; int written; int rfd; unsigned forks; } pipes[NPIPES];
static unsigned npipes;
static int pipes_lock;
/* Children the program made (fork, posix_spawn) while recording: a pipe made before the latest
 * of them may be read by a child that inherited its read end. */
static unsigned children_made;

/* A pipe made while recording, of which `fd` is an end; `rfd` is its read end in this
 * process, -1 for none (popen's pipe for writing). */
static void pipe_note(int fd, int rfd)
{
    struct stat st;
    if (!reprise_active() || reprise_io_replaying() || RAW_FSTAT(fd, &st) != 0) return;
    shim_lock(&pipes_lock);
    unsigned i = npipes++ % NPIPES;
    pipes[i].dev = st.st_dev;
    pipes[i].ino = st.st_ino;
    pipes[i].written = 0;
    pipes[i].rfd = rfd;
    pipes[i].forks = __atomic_load_n(&children_made, __ATOMIC_SEQ_CST);
    shim_unlock(&pipes_lock);
}

SHIM_HIDDEN void reprise_shim_pipe_made(const int p[2]) { pipe_note(p[0], p[0]); }
SHIM_HIDDEN void reprise_shim_pipe_to_child(int wfd) { pipe_note(wfd, -1); }

/* The entry of the pipe of status `st`, or -1 (the caller holds the lock). */
static int pipe_slot(const struct stat *st)
{
    unsigned n = npipes < NPIPES ? npipes : NPIPES;
    for (unsigned k = 0; k < n; k++) {
        unsigned i = (npipes - 1 - k) % NPIPES;
        if (pipes[i].ino == st->st_ino && pipes[i].dev == st->st_dev) return (int)i;
    }
    return -1;
}

/* The program writes into the pipe of `st` (marked before the write: a thread reading the
 * pipe must never see the bytes of a write not yet marked, which replay does not perform). */
SHIM_HIDDEN void reprise_shim_pipe_written(const struct stat *st)
{
    shim_lock(&pipes_lock);
    int i = pipe_slot(st);
    if (i >= 0) pipes[i].written = 1;
    shim_unlock(&pipes_lock);
}

/* Whether the pipe entry `i` was made before the program's latest child (fork, posix_spawn),
 * which may read it through the read end it inherited: Python's multiprocessing.Pool writes its
 * tasks into a pipe whose read end the parent keeps and its forked workers read. The caller
 * holds the lock. */
static int shared_with_child(int i)
{
    return pipes[i].forks != __atomic_load_n(&children_made, __ATOMIC_SEQ_CST);
}

/* What a read of the pipe of `st` reads: PIPE_FROM_CHILD what another process (a child) wrote,
 * for one the program made and never wrote into; PIPE_SHARED what the program wrote itself
 * or a child did, for one it wrote into and made a child after; else PIPE_OWN. */
SHIM_HIDDEN int reprise_shim_pipe_reads(const struct stat *st)
{
    if (!S_ISFIFO(st->st_mode)) return PIPE_OWN;
    shim_lock(&pipes_lock);
    int i = pipe_slot(st);
    int k = i < 0 ? PIPE_OWN : !pipes[i].written ? PIPE_FROM_CHILD : shared_with_child(i) ? PIPE_SHARED : PIPE_OWN;
    shim_unlock(&pipes_lock);
    return k;
}

/* Whether a write into `fd` (status `st`) feeds a child: a pipe the program made whose read
 * end it no longer holds (closed after the fork, or popen's), or one it made a child after
 * (shared_with_child: the child may read it). A program that keeps its read end open and has
 * no child since (a pipe to itself) writes for itself: such writes stay revocable, its reads
 * recorded. */
SHIM_HIDDEN int reprise_shim_feeds_child(const struct stat *st)
{
    if (!S_ISFIFO(st->st_mode)) return 0;
    shim_lock(&pipes_lock);
    int i = pipe_slot(st);
    int rfd = i < 0 ? -2 : shared_with_child(i) ? -1 : pipes[i].rfd;
    shim_unlock(&pipes_lock);
    if (rfd == -2) return 0;
    struct stat r;
    return rfd < 0 || RAW_FSTAT(rfd, &r) != 0 || r.st_ino != st->st_ino || r.st_dev != st->st_dev;
}

/* Replay of a read of a child's pipe that read `want` bytes while recording (0: the end of
 * file): read and drop what the child writes, up to that count, or up to the end of file;
 * `scratch` (`cap` bytes) is the program's buffer, which the recorded bytes then fill. Raw
 * system calls (also called from the SIGSYS handler, capture.rs). `wait`: wait for the bytes
 * (a child's pipe), or take only what is there (a pipe the program writes too and shares with
 * a child: replay performs its writes, the program's reads take theirs out again, unless a
 * child took them first). */
SHIM_HIDDEN void reprise_shim_drain_how(int fd, void *scratch, size_t cap, long want, int wait)
{
    if (want < 0 || cap == 0) return;
    long got = 0;
    for (;;) {
        size_t ask = cap;
        if (want > 0 && (size_t)(want - got) < ask) ask = (size_t)(want - got);
        if (!wait) {
            struct pollfd pf = { .fd = fd, .events = POLLIN };
            if (raw_syscall3(SYS_poll, (long)&pf, 1, 0) != 1 || !(pf.revents & POLLIN)) return;
        }
        long k = raw_syscall3(SYS_read, fd, (long)scratch, (long)ask);
        if (k == -EINTR) continue;
        if (k == -EAGAIN) {
            struct pollfd pf = { .fd = fd, .events = POLLIN };
            raw_syscall3(SYS_poll, (long)&pf, 1, -1);
            continue;
        }
        if (k <= 0) return;
        got += k;
        if (want > 0 && got >= want) return;
    }
}

/* ---- children: the recording's pid of each, and the replay's -------------------------------
 * A recorded wait result names the recording's child, which replay finds here. The program is
 * given the recording's pids in a full-mode replay (kill and the waits map them back) and the
 * replay's in sync mode (preload.rs, `reprise_recorded_pids`, says why). */
#define NCHILDREN 1024
static struct { pid_t rec, real; } children[NCHILDREN];
static unsigned nchildren;
static int children_lock;

/* Whether replay gives the program the recording's pids (preload.rs says when). */
extern int reprise_recorded_pids(void);

/* A child started (fork, posix_spawn): `real` is its pid in this run, or -1. Returns the pid
 * the program is given: the recording's in a replay that gives those. */
SHIM_HIDDEN pid_t reprise_shim_child_made(pid_t real)
{
    if (!reprise_active()) return real;
    if (!reprise_io_replaying() && real > 0) __atomic_fetch_add(&children_made, 1, __ATOMIC_SEQ_CST);
    pid_t rec = (pid_t)reprise_input((uint64_t)(int64_t)real);
    if (!reprise_io_replaying() || rec <= 0 || real <= 0) return real;
    shim_lock(&children_lock);
    unsigned i = nchildren++ % NCHILDREN;
    children[i].rec = rec;
    children[i].real = real;
    shim_unlock(&children_lock);
    return reprise_recorded_pids() ? rec : real;
}

/* The child whose recording's pid (`by_real` 0) or replay's pid (1) is `pid`: its other pid,
 * or 0 (the latest NCHILDREN children). */
static pid_t child_lookup(pid_t pid, int by_real)
{
    pid_t other = 0;
    shim_lock(&children_lock);
    unsigned n = nchildren < NCHILDREN ? nchildren : NCHILDREN;
    for (unsigned k = 0; k < n && !other; k++) {
        unsigned i = (nchildren - 1 - k) % NCHILDREN;
        if ((by_real ? children[i].real : children[i].rec) == pid) other = by_real ? children[i].rec : children[i].real;
    }
    shim_unlock(&children_lock);
    return other;
}

/* The replay's pid of the recording's child `rec`, or 0. */
static pid_t child_now(pid_t rec) { return child_lookup(rec, 0); }

/* The pid of this run for `pid` (or `-pid`, a process group), which the program was given:
 * a child's in a replay that gives the recording's pids; any other unchanged. For kill. */
SHIM_HIDDEN pid_t reprise_shim_child_real(pid_t pid)
{
    if (!reprise_active() || !reprise_io_replaying() || !reprise_recorded_pids()) return pid;
    pid_t r = pid > 0 ? child_now(pid) : pid < -1 ? child_now(-pid) : 0;
    return r <= 0 ? pid : pid > 0 ? r : -r;
}

/* The pid given to the program for the child whose pid is `real` in this run (or the group
 * it leads): the reverse of reprise_shim_child_real, for results that name one. */
static pid_t child_given(pid_t real)
{
    if (real <= 0 || !reprise_active() || !reprise_io_replaying() || !reprise_recorded_pids()) return real;
    pid_t rec = child_lookup(real, 1);
    return rec > 0 ? rec : real;
}

/* Process groups named by a child's pid (job control): mapped as kill's are, both ways. Their
 * results are the kernel's, as in the recording (the same children answer). */
int setpgid(pid_t pid, pid_t pgid)
{
    REAL(int, setpgid, (pid_t, pid_t));
    return real_setpgid(reprise_shim_child_real(pid), reprise_shim_child_real(pgid));
}
pid_t getpgid(pid_t pid)
{
    REAL(pid_t, getpgid, (pid_t));
    return child_given(real_getpgid(reprise_shim_child_real(pid)));
}
pid_t getsid(pid_t pid)
{
    REAL(pid_t, getsid, (pid_t));
    return child_given(real_getsid(reprise_shim_child_real(pid)));
}
int killpg(pid_t pgrp, int sig)
{
    REAL(int, killpg, (pid_t, int));
    return real_killpg(reprise_shim_child_real(pgrp), sig);
}

pid_t fork(void)
{
    REAL(pid_t, fork, (void));
    if (!reprise_active()) return real_fork();
    /* A safe point first, which leaves the system calls untrapped up to the next runtime entry
     * (calls.rs): glibc's own calls in fork, the child's before its at-fork handler turned its
     * runtime off among them. A trapped one there entered the runtime in the child, on its copy
     * of the parent's state, which could send the parent's buffered records to the launcher
     * (a periodic flush due): a bash recording lost its results that way, and every replay of
     * it stopped at its first call ("reached the end of its recorded events"). */
    reprise_safe_point();
    pid_t p = real_fork();
    if (p == 0) return 0; /* the child: its runtime is off */
    int e = errno;
    p = reprise_shim_child_made(p);
    errno = e;
    return p;
}

/* ---- the wait family: recorded results, the same child reaped in replay ------------------ */
static pid_t child_wait(pid_t pid, int *status, int options, struct rusage *ru)
{
    REAL(pid_t, wait4, (pid_t, int *, int, struct rusage *));
    if (!reprise_active()) return real_wait4(pid, status, options, ru);
    reprise_safe_point();
    CANCEL_POINT();
    int s = 0;
    long r = -1;
    int e = 0;
    pid_t now = 0;
    if (!reprise_io_replaying()) {
        CANCELLABLE(NULL, r = real_wait4(pid, &s, options, ru));
        e = errno;
    } else {
        /* Before the result's runtime entry, where the recording's wait had returned (a
         * signal recorded there is delivered there: bash's SIGCHLD handler waits again). */
        pid_t rec = (pid_t)reprise_peek_result((uint64_t)-1);
        if (rec > 0) {
            now = child_now(rec);
            pid_t want = now > 0 ? now : pid;
            int s2;
            long k;
            while ((k = real_wait4(want, &s2, options & ~WNOHANG, NULL)) < 0 && errno == EINTR) {}
            if (now <= 0 && k > 0) now = (pid_t)k;
        }
    }
    r = reprise_shim_io_result(r, e);
    e = errno;
    if (r > 0) {
        s = (int)reprise_input((uint64_t)(unsigned)s);
        if (status) *status = s;
        if (ru) reprise_io_data(ru, sizeof *ru);
        if (reprise_io_replaying() && now > 0 && !reprise_recorded_pids()) r = now;
    }
    errno = e;
    return (pid_t)r;
}

pid_t wait(int *status) { return child_wait(-1, status, 0, NULL); }
pid_t waitpid(pid_t pid, int *status, int options) { return child_wait(pid, status, options, NULL); }
pid_t wait3(int *status, int options, struct rusage *ru) { return child_wait(-1, status, options, ru); }
pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru) { return child_wait(pid, status, options, ru); }

/* waitid: the child it reports is in the siginfo, so that child's pid is recorded first, as an
 * input, which replay peeks to reap the same child (WNOWAIT kept: the program may wait for it
 * again), blocking, before the result; the siginfo is recorded data, its pid the replay's. */
int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
    REAL(int, waitid, (idtype_t, id_t, siginfo_t *, int));
    if (!reprise_active()) return real_waitid(idtype, id, info, options);
    reprise_safe_point();
    CANCEL_POINT();
    siginfo_t si;
    __builtin_memset(&si, 0, sizeof si); /* inline: the shim's memset is the wrapped one */
    long r = -1;
    int e = 0;
    pid_t now = 0;
    if (!reprise_io_replaying()) {
        CANCELLABLE(NULL, r = real_waitid(idtype, id, &si, options));
        e = errno;
    } else {
        pid_t rec = (pid_t)reprise_peek_result((uint64_t)-1);
        if (rec > 0) {
            now = child_now(rec);
            siginfo_t s2;
            idtype_t how = now > 0 ? P_PID : idtype;
            id_t which = now > 0 ? (id_t)now : id;
            while (real_waitid(how, which, &s2, options & ~WNOHANG) < 0 && errno == EINTR) {}
            if (now <= 0) now = s2.si_pid;
        }
    }
    reprise_input((uint64_t)(int64_t)si.si_pid);
    r = reprise_shim_io_result(r, e);
    e = errno;
    if (r == 0) {
        reprise_io_data(&si, sizeof si);
        if (reprise_io_replaying() && now > 0 && !reprise_recorded_pids()) si.si_pid = now;
        if (info) __builtin_memcpy(info, &si, sizeof si);
    }
    errno = e;
    return (int)r;
}

/* The C interposers of this file (weak: shim_names.c says why). */
#pragma weak fork
#pragma weak wait
#pragma weak waitpid
#pragma weak wait3
#pragma weak wait4
#pragma weak waitid
#pragma weak setpgid
#pragma weak getpgid
#pragma weak getsid
#pragma weak killpg
