/*
 * shm_peer.c — ranks that die (shm.h).
 *
 * Two signs, either enough: a pidfd per peer becomes readable when its
 * process exits (whoever reaps it, and immune to pid reuse), and quayrun,
 * which reaps the ranks, marks the slot exited, moves the header's epoch
 * and rings every doorbell, so blocked ranks notice at once. The epoch is
 * one load per poll; the pidfds are polled only when it moved or after a
 * whole idle sleep (at most QUAY_SHM_POLL_MS), so a death quayrun does not
 * see (another launcher, a kernel without pidfd_open) costs bounded time.
 *
 * A dead peer is settled once: everything it published is taken in first
 * (its packets stay receivable, its RDMA replies complete); if a bye was
 * among them it simply finished; otherwise it failed: every action toward
 * it ends with QUAY_EPEER and the runtime calls quay_on_peer_failed.
 */
#include "shm.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

void shm_peers_watch(shm_t *t)
{
    for (int32_t r = 0; r < t->base.size; r++) {
        shm_peer *p = &t->peers[r];
        if (r == t->base.rank)
            continue;
        p->pid = (pid_t)atomic_load(&p->slot->pid);
#ifdef SYS_pidfd_open
        p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
#else
        p->pidfd = -1;
#endif
        /* The peer may already be gone (ESRCH): the slot or kill() says so. */
    }
}

void shm_peers_unwatch(shm_t *t)
{
    for (int32_t r = 0; r < t->base.size; r++) {
        if (t->peers[r].pidfd >= 0)
            close(t->peers[r].pidfd);
        t->peers[r].pidfd = -1;
    }
}

static void settle(shm_t *t, int32_t peer)
{
    shm_peer *p = &t->peers[peer];
    if (p->pidfd >= 0)
        close(p->pidfd);
    p->pidfd = -1;
    int clean = shm_drain_dead(t, peer);
    if (p->state == SHM_FAILED)
        return; /* garbage in its ring: already failed */
    p->state = clean ? SHM_DONE : SHM_FAILED;
    shm_drop_queues(t, peer);
    shm_rdma_fail_peer(t, peer);
    if (!clean)
        t->base.sink->peer_failed(t->base.sink->ctx, peer);
}

static int exited(const shm_peer *p, short revents)
{
    if (atomic_load(&p->slot->state) == QSHM_SLOT_EXITED)
        return 1;
    if (p->pidfd >= 0)
        return (revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    /* No pidfd: a zombie still answers kill(), so this sees only reaped
     * processes; quayrun reaps promptly. */
    return kill(p->pid, 0) != 0 && errno == ESRCH;
}

int shm_peers_check(shm_t *t, int force)
{
    uint32_t ep = atomic_load_explicit(&t->seg.hdr->epoch, memory_order_acquire);
    struct pollfd stack_fds[64];
    struct pollfd *fds = stack_fds;
    int32_t n = t->base.size, nfd = 0, settled = 0;
    if (!force && ep == t->epoch_seen)
        return 0;
    t->epoch_seen = ep;
    if (n > 64) {
        fds = malloc((size_t)n * sizeof *fds);
        if (fds == NULL)
            return 0; /* try again next time */
    }
    for (int32_t r = 0; r < n; r++) {
        fds[r].fd = -1;
        fds[r].events = POLLIN;
        fds[r].revents = 0;
        if (r != t->base.rank && t->peers[r].state == SHM_LIVE && t->peers[r].pidfd >= 0) {
            fds[r].fd = t->peers[r].pidfd;
            nfd++;
        }
    }
    if (nfd > 0)
        (void)poll(fds, (nfds_t)n, 0); /* poll skips negative fds */
    for (int32_t r = 0; r < n; r++) {
        if (r == t->base.rank || t->peers[r].state != SHM_LIVE)
            continue;
        if (exited(&t->peers[r], fds[r].revents)) {
            settle(t, r);
            settled++;
        }
    }
    if (fds != stack_fds)
        free(fds);
    return settled;
}
