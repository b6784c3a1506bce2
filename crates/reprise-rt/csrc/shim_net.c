/* shim_net.c: sockets, poll, select and epoll: safe points and recorded results; descriptors
 * created in replay are placeholders (shim_fdio.c). */
#include "shim.h"
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>

/* Socket calls that may block (connect) or need no order: safe points, recorded results. */
#define NET_RESULT(ret, name, params, args)                                 \
    ret name params                                                         \
    {                                                                       \
        REAL(ret, name, params);                                            \
        if (!reprise_active()) return real_##name args;                     \
        reprise_safe_point();                                               \
        long r = -1;                                                        \
        int e = 0;                                                          \
        if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = (long)real_##name args); e = errno; } \
        else CANCEL_POINT();                                                \
        return (ret)reprise_shim_io_result(r, e);                           \
    }
NET_RESULT(int, bind, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
NET_RESULT(int, listen, (int fd, int n), (fd, n))
NET_RESULT(int, connect, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
NET_RESULT(int, shutdown, (int fd, int how), (fd, how))
NET_RESULT(int, setsockopt, (int fd, int lv, int o, const void *v, socklen_t l), (fd, lv, o, v, l))

#define NET_FD(name, params, args)                                          \
    int name params                                                         \
    {                                                                       \
        REAL(int, name, params);                                            \
        if (!reprise_ordered(&reprise_shim_fd_alloc_obj)) return real_##name args; \
        if (!reprise_io_replaying()) {                                      \
            int r = real_##name args;                                       \
            return (int)reprise_shim_io_result(r, errno);                   \
        }                                                                   \
        reprise_fd_hold_begin();                                            \
        int r = (int)reprise_shim_io_result(-1, 0);                         \
        return reprise_shim_placeholder(r);                                 \
    }
NET_FD(socket, (int d, int t, int p), (d, t, p))
NET_FD(epoll_create1, (int f), (f))
NET_FD(epoll_create, (int n), (n))

static int accept_common(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
    REAL(int, accept4, (int, struct sockaddr *, socklen_t *, int));
    if (!reprise_active()) return real_accept4(fd, addr, alen, flags);
    /* accept blocks: perform it with nothing held, then take the descriptor turn. */
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_accept4(fd, addr, alen, flags)); e = errno; }
    else CANCEL_POINT();
    reprise_ordered(&reprise_shim_fd_alloc_obj);
    if (reprise_io_replaying()) reprise_fd_hold_begin();
    r = (int)reprise_shim_io_result(r, e);
    if (r >= 0 && addr && alen) {
        *alen = (socklen_t)reprise_input((uint64_t)*alen);
        reprise_io_data(addr, *alen);
    }
    return reprise_io_replaying() ? reprise_shim_placeholder(r) : r;
}
int accept(int fd, struct sockaddr *a, socklen_t *l) { return accept_common(fd, a, l, 0); }
int accept4(int fd, struct sockaddr *a, socklen_t *l, int f) { return accept_common(fd, a, l, f); }

#define NET_ADDR(name)                                                      \
    int name(int fd, struct sockaddr *addr, socklen_t *alen)                \
    {                                                                       \
        REAL(int, name, (int, struct sockaddr *, socklen_t *));             \
        if (!reprise_active()) return real_##name(fd, addr, alen);          \
        reprise_safe_point();                                               \
        int r = -1, e = 0;                                                  \
        if (!reprise_io_replaying()) { r = real_##name(fd, addr, alen); e = errno; } \
        r = (int)reprise_shim_io_result(r, e);                              \
        if (r == 0) {                                                       \
            *alen = (socklen_t)reprise_input((uint64_t)*alen);              \
            reprise_io_data(addr, *alen);                                   \
        }                                                                   \
        return r;                                                           \
    }
NET_ADDR(getsockname)
NET_ADDR(getpeername)

int getsockopt(int fd, int lv, int o, void *v, socklen_t *l)
{
    REAL(int, getsockopt, (int, int, int, void *, socklen_t *));
    if (!reprise_active()) return real_getsockopt(fd, lv, o, v, l);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { r = real_getsockopt(fd, lv, o, v, l); e = errno; }
    r = (int)reprise_shim_io_result(r, e);
    if (r == 0) {
        *l = (socklen_t)reprise_input((uint64_t)*l);
        reprise_io_data(v, *l);
    }
    return r;
}

/* The result of a poll, select or epoll wait made before (record) or not (replay), and what it
 * filled in: recorded data. */
static int poll_result(int r, int e, struct pollfd *fds, nfds_t n)
{
    r = (int)reprise_shim_io_result(r, e);
    if (r >= 0) reprise_io_data(fds, n * sizeof *fds);
    return r;
}
static int select_result(int r, int e, fd_set *rd, fd_set *wr, fd_set *ex)
{
    r = (int)reprise_shim_io_result(r, e);
    if (r >= 0) {
        if (rd) reprise_io_data(rd, sizeof *rd);
        if (wr) reprise_io_data(wr, sizeof *wr);
        if (ex) reprise_io_data(ex, sizeof *ex);
    }
    return r;
}
static int epoll_result(int r, int e, struct epoll_event *evs)
{
    r = (int)reprise_shim_io_result(r, e);
    if (r > 0) reprise_io_data(evs, (size_t)r * sizeof *evs);
    return r;
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    REAL(int, poll, (struct pollfd *, nfds_t, int));
    if (!reprise_active()) return real_poll(fds, n, timeout);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_poll(fds, n, timeout)); e = errno; }
    else CANCEL_POINT();
    return poll_result(r, e, fds, n);
}
int select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
    REAL(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *));
    if (!reprise_active()) return real_select(n, rd, wr, ex, tv);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_select(n, rd, wr, ex, tv)); e = errno; }
    else CANCEL_POINT();
    return select_result(r, e, rd, wr, ex);
}
/* The waits that swap in a signal mask for their duration (pselect, ppoll, epoll_pwait) go as
 * their plain forms: performed while recording (the mask swapped in by the kernel, a signal
 * that came during the call delivered at its result's entry, after the result), their result
 * and ready sets recorded; replay makes no call. Made for real in replay, GNU make's `-j`
 * jobserver wait (pselect on its own token pipe, whose writes replay revokes) slept until a
 * child's SIGCHLD instead of returning the token's readiness, and make took another path. */
int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts, const sigset_t *mask)
{
    REAL(int, pselect, (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *));
    if (!reprise_active()) return real_pselect(n, rd, wr, ex, ts, mask);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_pselect(n, rd, wr, ex, ts, mask)); e = errno; }
    else CANCEL_POINT();
    return select_result(r, e, rd, wr, ex);
}
int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
    REAL(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *));
    if (!reprise_active()) return real_ppoll(fds, n, ts, mask);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_ppoll(fds, n, ts, mask)); e = errno; }
    else CANCEL_POINT();
    return poll_result(r, e, fds, n);
}
int epoll_pwait(int ep, struct epoll_event *evs, int max, int timeout, const sigset_t *mask)
{
    REAL(int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *));
    if (!reprise_active()) return real_epoll_pwait(ep, evs, max, timeout, mask);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_epoll_pwait(ep, evs, max, timeout, mask)); e = errno; }
    else CANCEL_POINT();
    return epoll_result(r, e, evs);
}
int epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    REAL(int, epoll_ctl, (int, int, int, struct epoll_event *));
    if (!reprise_active()) return real_epoll_ctl(ep, op, fd, ev);
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { r = real_epoll_ctl(ep, op, fd, ev); e = errno; }
    return (int)reprise_shim_io_result(r, e);
}
int epoll_wait(int ep, struct epoll_event *evs, int max, int timeout)
{
    REAL(int, epoll_wait, (int, struct epoll_event *, int, int));
    if (!reprise_active()) return real_epoll_wait(ep, evs, max, timeout);
    reprise_safe_point();
    int r = -1, e = 0;
    if (!reprise_io_replaying()) { CANCELLABLE(NULL, r = real_epoll_wait(ep, evs, max, timeout)); e = errno; }
    else CANCEL_POINT();
    return epoll_result(r, e, evs);
}

/* The C interposers of this file (the tests check that the archive defines no libc name
 * strongly). */
#pragma weak accept
#pragma weak accept4
#pragma weak bind
#pragma weak connect
#pragma weak epoll_create
#pragma weak epoll_create1
#pragma weak epoll_ctl
#pragma weak epoll_wait
#pragma weak epoll_pwait
#pragma weak getpeername
#pragma weak getsockname
#pragma weak getsockopt
#pragma weak listen
#pragma weak poll
#pragma weak ppoll
#pragma weak pselect
#pragma weak select
#pragma weak setsockopt
#pragma weak shutdown
#pragma weak socket
