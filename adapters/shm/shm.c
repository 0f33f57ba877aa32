/*
 * shm.c — the shm transport: open / close, frames out through the rings
 * (and the queues behind them), frames in, poll and blocking (shm.h).
 */
#include "shm.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "qrt_env.h"
#include "shm_futex.h"

#define SHM_POLL_MS_DEFAULT 20
#define SHM_DRAIN_BATCH 64
/* A singleton (no quayrun) makes its own, small segment. */
#define SHM_SOLO_RING 4096u

/* ---- frames out ---------------------------------------------------------------------- */

/* memcpy for a small frame's header and payload: whole words inline
 * (a header is 32 bytes), the library beyond 64 bytes. */
static inline void copy_small(uint8_t *dst, const void *src, size_t n)
{
    const uint8_t *s = src;
    if (n > 64) {
        memcpy(dst, s, n);
        return;
    }
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        memcpy(dst + i, &w, 8);
    }
    for (; i < n; i++)
        dst[i] = s[i];
}

/* Copy bytes [off, off + n) of the item's frame to dst. */
static void gather(const shm_item *it, size_t off, uint8_t *dst, size_t n)
{
    if (it->iovcnt == 0) {
        memcpy(dst, it->inl + off, n);
        return;
    }
    for (uint32_t i = 0; i < it->iovcnt && n > 0; i++) {
        size_t l = it->iov[i].len;
        if (off >= l) {
            off -= l;
            continue;
        }
        size_t c = l - off < n ? l - off : n;
        memcpy(dst, (const uint8_t *)it->iov[i].base + off, c);
        dst += c;
        n -= c;
        off = 0;
    }
}

/* Write as much of the frame as fits, in records of at most `chunk`
 * bytes (SHM_F_MORE on all but the last); *nrec counts the records
 * written. 1 when all of it is in. */
static int write_frame(qshm_ring *r, shm_item *it, uint32_t chunk, int *nrec)
{
    do {
        size_t left = it->total - it->sent;
        uint32_t n = left < chunk ? (uint32_t)left : chunk;
        uint8_t *dst = qshm_ring_reserve(r, n);
        if (dst == NULL)
            return 0;
        gather(it, it->sent, dst, n);
        it->sent += n;
        qshm_ring_commit(r, it->type, it->sent < it->total ? SHM_F_MORE : 0, n);
        (*nrec)++;
    } while (it->sent < it->total);
    return 1;
}

static void queue_push(shm_queue *q, shm_item *it)
{
    it->next = NULL;
    if (q->tail != NULL)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
}

static shm_item *queue_pop(shm_queue *q)
{
    shm_item *it = q->head;
    if (it != NULL) {
        q->head = it->next;
        if (q->head == NULL)
            q->tail = NULL;
    }
    return it;
}

static int queue_copy(shm_queue *q, const shm_item *src)
{
    shm_item *it = malloc(sizeof *it);
    if (it == NULL)
        return QUAY_ENOMEM;
    *it = *src;
    queue_push(q, it);
    return 0;
}

static uint32_t ctl_chunk(const shm_peer *p)
{
    return qshm_ring_max_record(&p->out_ctl);
}

int shm_send_ctl(shm_t *t, int32_t peer, uint8_t type, const void *bytes, size_t len)
{
    shm_peer *p = &t->peers[peer];
    shm_item it;
    memset(&it, 0, sizeof it);
    it.type = type;
    it.total = len;
    memcpy(it.inl, bytes, len);
    int nrec = 0;
    if (p->q_ctl.head == NULL && write_frame(&p->out_ctl, &it, ctl_chunk(p), &nrec)) {
        qshm_doorbell_notify(p->slot);
        return 0;
    }
    t->want_space = 1;
    if (queue_copy(&p->q_ctl, &it) != 0)
        return QUAY_ENOMEM;
    if (type == SHM_RDMA_DONE)
        p->reply_bytes += sizeof it;
    return 0;
}

int shm_try_ctl(shm_t *t, int32_t peer, uint8_t type, const void *bytes, size_t len)
{
    shm_peer *p = &t->peers[peer];
    shm_item it;
    if (p->q_ctl.head != NULL)
        return 0; /* behind queued frames: order demands the queue */
    memset(&it, 0, sizeof it);
    it.type = type;
    it.total = len;
    memcpy(it.inl, bytes, len);
    int nrec = 0;
    /* One record (len <= 64 < any ring's largest): all of it or nothing. */
    if (!write_frame(&p->out_ctl, &it, ctl_chunk(p), &nrec))
        return 0;
    qshm_doorbell_notify(p->slot);
    return 1;
}

static int shm_send(quay_transport *tp, int32_t peer, const quay_iov *iov, uint32_t iovcnt,
                    uint64_t token)
{
    shm_t *t = (shm_t *)tp;
    shm_item it;
    if (peer < 0 || peer >= tp->size || peer == tp->rank || iovcnt < 1 ||
        iovcnt > QUAY_ACTION_IOV_MAX)
        return QUAY_EINVAL;
    shm_peer *p = &t->peers[peer];
    if (p->state != SHM_LIVE)
        return QUAY_EPEER;
    uint64_t len = 0;
    for (uint32_t i = 0; i < iovcnt; i++)
        len += iov[i].len;
    if (len > SHM_PKT_MAX) {
        fprintf(stderr,
                "quay shm rank %d: a %llu-byte packet exceeds the transport's limit of %u "
                "bytes (lower QUAY_EAGER_MAX / QUAY_FRAG_SIZE)\n",
                (int)tp->rank, (unsigned long long)len, SHM_PKT_MAX);
        return QUAY_EINVAL;
    }
    /* Behind queued frames, order demands the queue. Otherwise a frame
     * that fits one record goes straight into the ring, the common case:
     * one copy, no allocation. */
    size_t l0 = iov[0].len, l1 = iovcnt > 1 ? iov[1].len : 0;
    if (p->q_pkt.head == NULL && l0 <= t->max_chunk && l1 <= t->max_chunk - l0) {
        uint8_t *dst = qshm_ring_reserve(&p->out_pkt, (uint32_t)(l0 + l1));
        if (dst != NULL) {
            copy_small(dst, iov[0].base, l0);
            if (l1 > 0)
                copy_small(dst + l0, iov[1].base, l1);
            qshm_ring_commit(&p->out_pkt, SHM_PKT, 0, (uint32_t)(l0 + l1));
            qshm_doorbell_notify(p->slot);
            return 1;
        }
    }
    /* Queued (a larger frame too, so that an allocation failure never
     * leaves half a frame in the ring), then flushed by poll. */
    memset(&it, 0, sizeof it);
    it.type = SHM_PKT;
    it.iovcnt = iovcnt;
    it.has_token = 1;
    it.token = token;
    for (uint32_t i = 0; i < iovcnt; i++) {
        it.iov[i] = iov[i];
        it.total += iov[i].len;
    }
    if (queue_copy(&p->q_pkt, &it) != 0)
        return QUAY_ENOMEM;
    t->want_space = 1;
    return 0;
}

/* Move one of p's queues into its ring while its frames fit (a large
 * one perhaps only in part). Returns the records written. */
static int flush_queue(shm_t *t, shm_peer *p, shm_queue *q, qshm_ring *r, uint32_t chunk)
{
    int nrec = 0;
    shm_item *it;
    while ((it = q->head) != NULL) {
        if (!write_frame(r, it, chunk, &nrec)) {
            /* Ask the consumer for a doorbell once it frees room; then
             * look once more, in case it freed it meanwhile. */
            atomic_store(&r->ctl->want_space, 1);
            atomic_thread_fence(memory_order_seq_cst);
            if (!write_frame(r, it, chunk, &nrec))
                break;
        }
        queue_pop(q);
        if (it->type == SHM_RDMA_DONE)
            p->reply_bytes -= sizeof *it;
        if (it->has_token)
            t->base.sink->op_done(t->base.sink->ctx, it->token, 0);
        free(it);
    }
    return nrec;
}

int shm_flush_peer(shm_t *t, int32_t peer)
{
    shm_peer *p = &t->peers[peer];
    int nrec = flush_queue(t, p, &p->q_ctl, &p->out_ctl, ctl_chunk(p));
    nrec += flush_queue(t, p, &p->q_pkt, &p->out_pkt, t->max_chunk);
    /* Every record counts, a fragment too: the consumer must come for
     * it to make room for the rest. */
    if (nrec > 0)
        qshm_doorbell_notify(p->slot);
    return nrec;
}

void shm_drop_queues(shm_t *t, int32_t peer)
{
    shm_peer *p = &t->peers[peer];
    shm_queue *qs[2] = {&p->q_ctl, &p->q_pkt};
    for (int k = 0; k < 2; k++) {
        shm_item *it;
        while ((it = queue_pop(qs[k])) != NULL) {
            if (it->has_token)
                t->base.sink->op_done(t->base.sink->ctx, it->token, QUAY_EPEER);
            free(it);
        }
    }
    p->reply_bytes = 0;
    p->ctl_paused = 0;
}

/* 1 while peer's ctl ring is left unread: from when its replies fill
 * SHM_REPLY_MAX until they are down to SHM_REPLY_LOW. */
static int shm_ctl_paused(shm_peer *p)
{
    if (p->reply_bytes + sizeof(shm_item) > SHM_REPLY_MAX)
        p->ctl_paused = 1;
    else if (p->reply_bytes <= SHM_REPLY_LOW)
        p->ctl_paused = 0;
    return p->ctl_paused;
}

static int shm_bye(quay_transport *tp)
{
    shm_t *t = (shm_t *)tp;
    shm_item it;
    memset(&it, 0, sizeof it);
    it.type = SHM_BYE;
    for (int32_t r = 0; r < tp->size; r++) {
        if (r == tp->rank || t->peers[r].state != SHM_LIVE)
            continue;
        /* Queued, so that it follows everything already waiting. */
        if (queue_copy(&t->peers[r].q_pkt, &it) != 0)
            return QUAY_ENOMEM;
    }
    t->want_space = 1;
    return 0;
}

/* ---- frames in ----------------------------------------------------------------------- */

/* The consumer freed room in `r` (from peer): ring the producer's
 * doorbell if it asked for it (the other half of flush_queue's fence). */
static void room_freed(qshm_ring *r, shm_peer *p)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&r->ctl->want_space, memory_order_relaxed) &&
        atomic_exchange(&r->ctl->want_space, 0))
        qshm_doorbell_notify(p->slot);
}

static int deliver(shm_t *t, int32_t peer, const void *b, size_t n)
{
    return t->base.sink->packet(t->base.sink->ctx, peer, b, n);
}

/* A ring holds something that cannot be a record: the peer is broken. */
static void ring_garbage(shm_t *t, int32_t peer)
{
    fprintf(stderr, "quay shm rank %d: garbage in the ring from rank %d; treating it as failed\n",
            (int)t->base.rank, (int)peer);
    t->peers[peer].state = SHM_FAILED;
    shm_drop_queues(t, peer);
    shm_rdma_fail_peer(t, peer);
    t->base.sink->peer_failed(t->base.sink->ctx, peer);
}

/* Never past SHM_PKT_MAX (checked by the caller). */
static int asm_append(shm_peer *p, const qshm_rec *rec)
{
    if (p->asm_len + rec->len > p->asm_cap) {
        size_t cap = p->asm_cap ? p->asm_cap : 65536;
        while (cap < p->asm_len + rec->len)
            cap *= 2;
        if (cap > SHM_PKT_MAX)
            cap = SHM_PKT_MAX;
        uint8_t *b = realloc(p->asm_buf, cap);
        if (b == NULL)
            return QUAY_ENOMEM;
        p->asm_buf = b;
        p->asm_cap = cap;
    }
    memcpy(p->asm_buf + p->asm_len, rec->data, rec->len);
    p->asm_len += rec->len;
    return 0;
}

/* Engine packets and the bye from `peer`, in order, up to `batch`
 * records. A packet the engine refuses stays where it is (in the ring, or
 * assembled) and stops this peer until the next poll. */
static int drain_pkt(shm_t *t, int32_t peer, uint32_t batch)
{
    shm_peer *p = &t->peers[peer];
    qshm_rec rec;
    int work = 0, consumed = 0;
    if (p->asm_ready) {
        if (deliver(t, peer, p->asm_buf, p->asm_len) == QUAY_EAGAIN)
            return 0;
        p->asm_ready = 0;
        p->asm_len = 0;
        work++;
    }
    for (uint32_t i = 0; i < batch && p->state != SHM_FAILED; i++) {
        int rc = qshm_ring_peek(&p->in_pkt, &rec);
        if (rc == 0)
            break;
        if (rc < 0) {
            ring_garbage(t, peer);
            break;
        }
        if (rec.type == SHM_PKT && ((rec.flags & SHM_F_MORE) || p->asm_len > 0)) {
            if (rec.len > SHM_PKT_MAX - p->asm_len) {
                ring_garbage(t, peer); /* a packet over the limit */
                break;
            }
            if (asm_append(p, &rec) != 0) {
                fprintf(stderr, "quay shm rank %d: out of memory reassembling a packet\n",
                        (int)t->base.rank);
                break; /* try again on the next poll */
            }
            qshm_ring_consume(&p->in_pkt, &rec);
            consumed = 1;
            work++;
            if (rec.flags & SHM_F_MORE)
                continue;
            if (deliver(t, peer, p->asm_buf, p->asm_len) == QUAY_EAGAIN) {
                p->asm_ready = 1;
                break;
            }
            p->asm_len = 0;
            continue;
        }
        if (rec.type == SHM_PKT && deliver(t, peer, rec.data, rec.len) == QUAY_EAGAIN)
            break; /* zero copy: it is offered again from the ring */
        qshm_ring_consume(&p->in_pkt, &rec);
        consumed = 1;
        work++;
        if (rec.type == SHM_BYE && !p->got_bye) {
            p->got_bye = 1;
            t->base.sink->peer_bye(t->base.sink->ctx, peer);
        }
    }
    if (consumed)
        room_freed(&p->in_pkt, p);
    return work;
}

/* RDMA requests and replies from `peer`: taken at once (they never wait
 * for the engine), up to `batch`, unless its replies fill their bound
 * (then the rest waits in the ring). */
static int drain_ctl(shm_t *t, int32_t peer, uint32_t batch)
{
    shm_peer *p = &t->peers[peer];
    qshm_rec rec;
    uint8_t copy[64];
    int work = 0;
    for (uint32_t i = 0; i < batch && p->state != SHM_FAILED && !shm_ctl_paused(p); i++) {
        int rc = qshm_ring_peek(&p->in_ctl, &rec);
        if (rc == 0)
            break;
        if (rc < 0 || rec.len > sizeof copy) {
            ring_garbage(t, peer);
            break;
        }
        /* Copy out and release first: serving may take long (a large
         * copy) and the reply goes the other way anyway. */
        memcpy(copy, rec.data, rec.len);
        rec.data = copy;
        qshm_ring_consume(&p->in_ctl, &rec);
        work++;
        shm_rdma_record(t, peer, &rec);
    }
    if (work > 0)
        room_freed(&p->in_ctl, p);
    return work;
}

int shm_drain_dead(shm_t *t, int32_t peer)
{
    shm_peer *p = &t->peers[peer];
    /* The producer is gone: everything it published is final. */
    drain_ctl(t, peer, UINT32_MAX);
    drain_pkt(t, peer, UINT32_MAX);
    return p->got_bye || qshm_ring_holds(&p->in_pkt, SHM_BYE);
}

/* quayrun moves the epoch when it sees a rank exit. */
static inline int epoch_moved(const shm_t *t)
{
    return atomic_load_explicit(&t->seg.hdr->epoch, memory_order_acquire) != t->epoch_seen;
}

/* One pass over every peer: flush, then take in. */
static int poll_once(shm_t *t)
{
    int work = 0;
    if (epoch_moved(t))
        work = shm_peers_check(t, 0);
    if (t->want_space) {
        int waiting = 0;
        for (int32_t r = 0; r < t->base.size; r++) {
            shm_peer *p = &t->peers[r];
            if (p->q_ctl.head == NULL && p->q_pkt.head == NULL)
                continue;
            work += shm_flush_peer(t, r);
            waiting |= p->q_ctl.head != NULL || p->q_pkt.head != NULL;
        }
        t->want_space = waiting;
    }
    for (int32_t r = 0; r < t->base.size; r++) {
        shm_peer *p = &t->peers[r];
        if (r == t->base.rank || p->state == SHM_FAILED)
            continue;
        if (qshm_ring_ready(&p->in_ctl) && !shm_ctl_paused(p))
            work += drain_ctl(t, r, t->drain_batch);
        if (p->asm_ready || qshm_ring_ready(&p->in_pkt))
            work += drain_pkt(t, r, t->drain_batch);
    }
    return work;
}

/* Anything for poll_once to do? Leaf code that only reads: the idle
 * poll of a waiting rank, repeated until something arrives, makes no
 * call and saves no register. */
static inline int poll_wanted(const shm_t *t)
{
    if (t->want_space || epoch_moved(t))
        return 1;
    for (int32_t r = 0; r < t->base.size; r++) {
        const shm_peer *p = &t->peers[r];
        if (r != t->base.rank && p->state != SHM_FAILED &&
            (p->asm_ready || qshm_ring_ready(&p->in_ctl) || qshm_ring_ready(&p->in_pkt)))
            return 1;
    }
    return 0;
}

static int shm_poll(quay_transport *tp, int64_t timeout_ns)
{
    shm_t *t = (shm_t *)tp;
    int work = poll_wanted(t) ? poll_once(t) : 0;
    if (work > 0 || timeout_ns <= 0)
        return work;
    /* Doorbell protocol (shm_futex.h): read the word, say we may sleep,
     * look once more, then sleep only if the word has not moved. */
    uint32_t seq = atomic_load(&t->me->doorbell);
    atomic_store(&t->me->sleeping, 1);
    atomic_thread_fence(memory_order_seq_cst);
    work = poll_once(t);
    if (work == 0)
        qshm_futex_wait(&t->me->doorbell, seq,
                        timeout_ns < t->poll_ns ? timeout_ns : t->poll_ns);
    atomic_store(&t->me->sleeping, 0);
    if (work == 0) {
        work = poll_once(t);
        /* Idle for a whole sleep: a peer may have died where quayrun
         * cannot see it (pidfds tell). */
        if (work == 0)
            work = shm_peers_check(t, 1);
    }
    return work;
}

static int shm_busy(const quay_transport *tp)
{
    return ((const shm_t *)tp)->want_space;
}

static void shm_wake(quay_transport *tp)
{
    qshm_doorbell_ring(((shm_t *)tp)->me);
}

/* ---- open / close -------------------------------------------------------------------- */

static void shm_close(quay_transport *tp)
{
    shm_t *t = (shm_t *)tp;
    if (t == NULL)
        return;
    if (t->peers != NULL) {
        shm_peers_unwatch(t);
        for (int32_t r = 0; r < tp->size; r++) {
            shm_peer *p = &t->peers[r];
            shm_queue *qs[2] = {&p->q_ctl, &p->q_pkt};
            for (int k = 0; k < 2; k++) {
                shm_item *it;
                while ((it = queue_pop(qs[k])) != NULL)
                    free(it);
            }
            free(p->asm_buf);
        }
    }
    shm_rdma_free(t);
    free(t->peers);
    qshm_seg_detach(&t->seg);
    free(t);
}

static int shm_rdma_op(quay_transport *tp, const quay_action *a)
{
    return shm_rdma_start((shm_t *)tp, a);
}

static const quay_transport_ops shm_ops = {
    .abi_version = QUAY_TRANSPORT_ABI_VERSION,
    .name = "shm",
    .send = shm_send,
    .rdma = shm_rdma_op,
    .poll = shm_poll,
    .wake = shm_wake,
    .bye = shm_bye,
    .busy = shm_busy,
    .close = shm_close,
};

/* Start-up barrier k: every rank has arrived, or one exited first. */
static int barrier(shm_t *t, int k)
{
    qshm_header *h = t->seg.hdr;
    uint32_t n = h->nranks;
    uint32_t v = atomic_fetch_add(&h->arrived[k], 1) + 1;
    if (v >= n) {
        qshm_futex_wake(&h->arrived[k]);
        return 0;
    }
    for (;;) {
        v = atomic_load(&h->arrived[k]);
        if (v >= n)
            return 0;
        for (uint32_t r = 0; r < n; r++) {
            if (atomic_load(&qshm_seg_slot(&t->seg, r)->state) == QSHM_SLOT_EXITED) {
                fprintf(stderr, "quay shm rank %d: rank %u exited during start-up\n",
                        (int)t->base.rank, r);
                return QUAY_EPEER;
            }
        }
        qshm_futex_wait(&h->arrived[k], v, t->poll_ns);
    }
}

/* The most a rank populates at start (qshm_seg_prefault): its rings with
 * up to 31 peers at the default sizes. */
#define SHM_PREFAULT_MAX (16ull << 20)

static int attach(shm_t *t)
{
    uint64_t fd = 0;
    int h = qrt_env_u64("QUAY_SHM_FD", 0, INT_MAX, &fd);
    int rc;
    if (h < 0)
        return QUAY_EINVAL;
    if (h == 1) {
        if (t->base.size != 1) {
            fprintf(stderr, "quay shm: QUAY_SHM_FD is not set: start the program with quayrun\n");
            return QUAY_EINVAL;
        }
        int f = -1;
        rc = qshm_seg_create(1, SHM_SOLO_RING, SHM_SOLO_RING, &t->seg, &f);
        if (rc == 0)
            close(f);
    } else {
        rc = qshm_seg_attach((int)fd, (uint32_t)t->base.size, &t->seg);
        /* The mapping keeps the segment; the fd is not needed any more. */
        if (rc == 0)
            close((int)fd);
    }
    if (rc != 0) {
        fprintf(stderr, "quay shm rank %d: cannot attach the segment (fd %d): %s\n",
                (int)t->base.rank, (int)fd, strerror(-rc));
        return QUAY_EINVAL;
    }
    return 0;
}

static void init_peers(shm_t *t)
{
    const qshm_seg *s = &t->seg;
    uint32_t me = (uint32_t)t->base.rank;
    for (uint32_t r = 0; r < (uint32_t)t->base.size; r++) {
        shm_peer *p = &t->peers[r];
        p->slot = qshm_seg_slot(s, r);
        p->pidfd = -1;
        if (r == me)
            continue;
        qshm_ring_init(&p->out_pkt, qshm_seg_pkt_ctl(s, me, r), qshm_seg_pkt_data(s, me, r),
                       s->hdr->ring_bytes, 1);
        qshm_ring_init(&p->out_ctl, qshm_seg_ctl_ctl(s, me, r), qshm_seg_ctl_data(s, me, r),
                       s->hdr->ctl_bytes, 1);
        qshm_ring_init(&p->in_pkt, qshm_seg_pkt_ctl(s, r, me), qshm_seg_pkt_data(s, r, me),
                       s->hdr->ring_bytes, 0);
        qshm_ring_init(&p->in_ctl, qshm_seg_ctl_ctl(s, r, me), qshm_seg_ctl_data(s, r, me),
                       s->hdr->ctl_bytes, 0);
    }
}

int qrt_shm_open(int32_t rank, int32_t size, const quay_transport_sink *sink, quay_transport **pt)
{
    uint64_t poll_ms = SHM_POLL_MS_DEFAULT;
    shm_t *t;
    int rc;
    *pt = NULL;
    /* Yama (ptrace_scope 1) lets only ancestors use process_vm_* on us:
     * open that to the sibling ranks. Harmless where Yama is absent. */
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    if (qrt_env_u64("QUAY_SHM_POLL_MS", 1, 60000, &poll_ms) < 0)
        return QUAY_EINVAL;
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return QUAY_ENOMEM;
    if (shm_rdma_config(t) != 0) {
        free(t);
        return QUAY_EINVAL;
    }
    t->base.ops = &shm_ops;
    t->base.sink = sink;
    t->base.rank = rank;
    t->base.size = size;
    t->poll_ns = (int64_t)poll_ms * 1000000;
    t->drain_batch = SHM_DRAIN_BATCH;
    qrt_optab_init(&t->optab);
    t->probe_word = QSHM_MAGIC ^ (uint64_t)rank;
    rc = attach(t);
    if (rc != 0) {
        free(t);
        return rc;
    }
    t->peers = calloc((size_t)size, sizeof *t->peers);
    if (t->peers == NULL) {
        shm_close(&t->base);
        return QUAY_ENOMEM;
    }
    init_peers(t);
    /* The rings this rank uses, populated now rather than a page fault
     * at a time during the first messages (osu_bcast's first sizes paid
     * for it); bounded, since a large job's rings are most of the
     * segment and the pairs that never talk need no memory. */
    qshm_seg_prefault(&t->seg, (uint32_t)rank, SHM_PREFAULT_MAX);
    t->me = t->peers[rank].slot;
    t->max_chunk = (uint32_t)(t->seg.hdr->ring_bytes / 2 - QSHM_REC_HDR); /* as the ring's */
    t->epoch_seen = atomic_load(&t->seg.hdr->epoch);

    /* Publish who we are, meet everyone, probe single copy, meet again:
     * after the second barrier every rank reads the same verdict. */
    atomic_store(&t->me->pid, (int32_t)getpid());
    atomic_store(&t->me->probe_addr, (uint64_t)(uintptr_t)&t->probe_word);
    atomic_store(&t->me->state, QSHM_SLOT_ATTACHED);
    rc = barrier(t, 0);
    if (rc == 0) {
        shm_peers_watch(t);
        shm_rdma_probe(t);
        rc = barrier(t, 1);
    }
    if (rc != 0) {
        shm_close(&t->base);
        return rc;
    }
    t->base.caps = QUAY_CAP_ORDERED | QUAY_CAP_RDMA_ATOMIC;
    if (atomic_load(&t->seg.hdr->rdma_ok))
        t->base.caps |= QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
    else if (rank == 0 && atomic_load(&t->seg.hdr->rdma_errno) != 0)
        fprintf(stderr,
                "quay shm: single-copy transfers are not available (process_vm_readv "
                "between ranks failed: %s); large messages go through the shared rings "
                "instead. Yama's ptrace_scope, a seccomp filter or a missing "
                "CAP_SYS_PTRACE can cause this; QUAY_SHM_RDMA=0 turns the probe off.\n",
                strerror(atomic_load(&t->seg.hdr->rdma_errno)));
    *pt = &t->base;
    return 0;
}
