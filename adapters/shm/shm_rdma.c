/*
 * shm_rdma.c — single-copy transfers: the engine's RDMA_GET / RDMA_PUT /
 * RDMA_ATOMIC actions, executed by the TARGET rank (shm.h), large copies
 * together with the initiator.
 *
 * The initiator knows (peer, key, offset); only the target's engine knows
 * which address that is (quay_mem_resolve). So the initiator sends a
 * request on the ctl ring: op, key, offset, length, the address of its own
 * buffer, and a cookie naming the action. The target resolves the key and
 * moves the bytes itself with process_vm_writev (GET: its region into the
 * initiator's buffer) or process_vm_readv (PUT: the initiator's buffer
 * into its region) — one copy, no staging — or runs the atomic
 * (quay_mem_atomic, one at a time since the target is single-threaded),
 * and replies with (cookie, status, old value). The initiator then gives
 * the engine its op_done. A refused key travels back as the status.
 *
 * Split copies. One core copying is slower than two: a GET or PUT of at
 * least split_min bytes (QUAY_SHM_SPLIT_KB) is shared. Once the key is
 * resolved, the target first sends SPLIT (cookie, the resolved address,
 * the split point s), then copies [0, s) as above and replies DONE for
 * that share (flagged split). The initiator, taking SPLIT in its poll,
 * copies [s, len) itself at the same time — GET: process_vm_readv from
 * the target's address into its buffer; PUT: process_vm_writev from its
 * buffer there — and keeps the status of its share in the action. SPLIT
 * always comes before its DONE on the ring and the initiator's share is
 * copied while SPLIT is taken, so the DONE finds it finished: the action
 * ends there, once (status: the initiator's error if its share failed,
 * else the target's), or, should the target die first, in
 * shm_rdma_fail_peer (QUAY_EPEER). The target splits only when the
 * initiator is free to help — no action of the target's own toward it is
 * in flight (else it is busy serving those: with traffic both ways both
 * cores copy already, and splitting measured slower) — and when SPLIT
 * goes into the ring at once (never queued behind other frames); else it
 * copies everything itself, as before.
 *
 * The target's address stays valid while the initiator copies: what a
 * key names must stay registered until the action completes at the
 * initiator — the engine's rendezvous regions do (GET: the sender keeps
 * its region until the FIN, which the receiver sends after its last
 * op_done; PUT: the receiver keeps its region until the sender's FIN,
 * sent after the last op_done), and for quay_iput / quay_iget the
 * caller's region is its business, as with verbs (quay_mem_deregister).
 *
 * process_vm_* needs ptrace permission over the other rank: at start-up
 * every rank tries to read a known word of its neighbour; if any fails,
 * no rank advertises QUAY_CAP_RDMA_GET / PUT and the engine moves
 * rendezvous data in DATA packets through the rings instead. Atomics do
 * not copy across processes and always work.
 */
#include "shm.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "qrt_env.h"

/* Request and reply, between processes of one build on one host: fixed
 * width fields in host order, checked for length before use. */
typedef struct rdma_req {
    uint32_t op;  /* QUAY_ACT_RDMA_GET / _PUT / _ATOMIC */
    uint32_t aop; /* QUAY_ATOMIC_* */
    uint64_t cookie;
    uint64_t key;
    uint64_t offset;
    uint64_t len;
    uint64_t local; /* the initiator's buffer */
    uint64_t operand;
    uint64_t compare;
} rdma_req;

typedef struct rdma_done {
    uint64_t cookie;
    int32_t status;
    uint32_t split; /* 1: the target copied [0, split point) only, after a SPLIT */
    uint64_t old;   /* atomics: the word's previous value */
} rdma_done;

/* Target -> initiator before its share of a split GET / PUT: the
 * initiator copies [split, len) between its buffer and `remote`. */
typedef struct rdma_split {
    uint64_t cookie;
    uint64_t remote; /* the target's address of byte 0 of the transfer */
    uint64_t split;  /* 0 < split < len */
} rdma_split;

_Static_assert(sizeof(rdma_req) <= 64 && sizeof(rdma_done) <= 64 && sizeof(rdma_split) <= 64,
               "ctl frames fit shm_item.inl");

/* Split copies: QUAY_SHM_SPLIT_KB's default, and the target's share of
 * the bytes in 1/1024ths. Measured on two cores (bench/mpi qbench bw and
 * latency): splitting pays from 32 KiB on (at 16 KiB hardly), and half
 * each is best — the initiator joins a little later, but 480 or 544
 * were no better. Split points are multiples of SPLIT_ALIGN. */
#define SPLIT_KB_DEFAULT 32
#define SPLIT_SHARE 512
#define SPLIT_ALIGN 64u

/* The initiator died while we served it: nobody to reply to. */
#define VM_GONE 1

/* Copy len bytes between our `local` and `remote` in process `pid`. 0,
 * VM_GONE, or a QUAY_E* status for the initiator. */
static int vm_copy(pid_t pid, void *local, uint64_t remote, uint64_t len, int to_remote)
{
    uint8_t *l = local;
    while (len > 0) {
        struct iovec li = {l, (size_t)len};
        struct iovec ri = {(void *)(uintptr_t)remote, (size_t)len};
        ssize_t n = to_remote ? process_vm_writev(pid, &li, 1, &ri, 1, 0)
                              : process_vm_readv(pid, &li, 1, &ri, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == ESRCH)
            return VM_GONE;
        if (n < 0 && (errno == EPERM || errno == ENOSYS))
            return QUAY_ENOTSUP;
        if (n <= 0)
            return QUAY_EINVAL; /* EFAULT: a bad buffer on either side */
        l += n;
        remote += (uint64_t)n;
        len -= (uint64_t)n;
    }
    return 0;
}

int shm_rdma_config(shm_t *t)
{
    uint64_t kb = SPLIT_KB_DEFAULT;
    if (qrt_env_u64("QUAY_SHM_SPLIT_KB", 0, UINT64_C(1) << 32, &kb) < 0)
        return QUAY_EINVAL;
    t->split_min = kb * 1024;
    return 0;
}

void shm_rdma_probe(shm_t *t)
{
    qshm_header *h = t->seg.hdr;
    uint64_t on = 1;
    int err = 0;
    if (qrt_env_u64("QUAY_SHM_RDMA", 0, 1, &on) < 0)
        on = 0;
    if (on && t->base.size > 1) {
        int32_t sib = (t->base.rank + 1) % t->base.size;
        qshm_slot *s = t->peers[sib].slot;
        uint64_t v = 0;
        struct iovec li = {&v, sizeof v};
        struct iovec ri = {(void *)(uintptr_t)atomic_load(&s->probe_addr), sizeof v};
        ssize_t n = process_vm_readv((pid_t)atomic_load(&s->pid), &li, 1, &ri, 1, 0);
        if (n < 0)
            err = errno;
        else if (n != (ssize_t)sizeof v || v != (QSHM_MAGIC ^ (uint64_t)sib))
            err = EIO;
    }
    if (!on || err != 0) {
        int32_t zero = 0;
        if (err != 0)
            atomic_compare_exchange_strong(&h->rdma_errno, &zero, err);
        atomic_store(&h->rdma_ok, 0);
    }
}

/* ---- the initiator's table of actions in flight ------------------------------------- */

/* A request past SHM_RDMA_DEPTH, not sent yet. */
typedef struct shm_wait {
    struct shm_wait *next;
    rdma_req q;
} shm_wait;

/* Slot idx is free again; its peer has one action less in flight. */
static void op_free(shm_t *t, uint32_t idx)
{
    shm_peer *p = &t->peers[t->optab.ops[idx].peer];
    p->rdma_out--;
    if (t->optab.ops[idx].held)
        p->rdma_wait--;
    qrt_op_free(&t->optab, idx);
}

/* Send waiting requests while the depth has room; one that cannot be
 * (no memory) ends with QUAY_ENOMEM. */
static void send_waiting(shm_t *t, int32_t peer)
{
    shm_peer *p = &t->peers[peer];
    while (p->wait_head != NULL && p->rdma_out - p->rdma_wait < SHM_RDMA_DEPTH) {
        shm_wait *w = p->wait_head;
        p->wait_head = w->next;
        if (p->wait_head == NULL)
            p->wait_tail = NULL;
        qrt_op *o = qrt_op_find(&t->optab, w->q.cookie, peer);
        if (o != NULL) {
            o->held = 0;
            p->rdma_wait--;
            if (shm_send_ctl(t, peer, SHM_RDMA_REQ, &w->q, sizeof w->q) != 0) {
                uint64_t token = o->token;
                op_free(t, (uint32_t)(o - t->optab.ops));
                t->base.sink->op_done(t->base.sink->ctx, token, QUAY_ENOMEM);
            }
        }
        free(w);
    }
}

static void free_waiting(shm_peer *p)
{
    while (p->wait_head != NULL) {
        shm_wait *w = p->wait_head;
        p->wait_head = w->next;
        free(w);
    }
    p->wait_tail = NULL;
}

int shm_rdma_start(shm_t *t, const quay_action *a)
{
    int32_t peer = a->peer;
    int atomic = a->kind == QUAY_ACT_RDMA_ATOMIC;
    uint32_t idx;
    if (peer < 0 || peer >= t->base.size || peer == t->base.rank ||
        (a->rdma.local == NULL && (atomic || a->rdma.len != 0)))
        return QUAY_EINVAL;
    if (!atomic && !(t->base.caps & (a->kind == QUAY_ACT_RDMA_GET ? QUAY_CAP_RDMA_GET
                                                                  : QUAY_CAP_RDMA_PUT)))
        return QUAY_ENOTSUP;
    if (t->peers[peer].state != SHM_LIVE)
        return QUAY_EPEER;
    if (qrt_op_alloc(&t->optab, &idx) != 0)
        return QUAY_ENOMEM;
    qrt_op *o = &t->optab.ops[idx];
    shm_peer *p = &t->peers[peer];
    int wait = p->rdma_out - p->rdma_wait >= SHM_RDMA_DEPTH || p->wait_head != NULL;
    o->token = a->token;
    o->local = a->rdma.local;
    o->len = atomic ? 8 : a->rdma.len;
    o->peer = peer;
    o->kind = (uint8_t)a->kind;
    p->rdma_out++;
    rdma_req q = {(uint32_t)a->kind,
                  a->atomic.op,
                  qrt_op_cookie(&t->optab, idx),
                  a->rdma.key,
                  a->rdma.offset,
                  atomic ? 8 : a->rdma.len,
                  (uint64_t)(uintptr_t)a->rdma.local,
                  a->atomic.operand,
                  a->atomic.compare};
    if (wait) {
        shm_wait *w = malloc(sizeof *w);
        if (w == NULL) {
            op_free(t, idx);
            return QUAY_ENOMEM;
        }
        w->next = NULL;
        w->q = q;
        if (p->wait_tail != NULL)
            p->wait_tail->next = w;
        else
            p->wait_head = w;
        p->wait_tail = w;
        o->held = 1;
        p->rdma_wait++;
        return 0;
    }
    if (shm_send_ctl(t, peer, SHM_RDMA_REQ, &q, sizeof q) != 0) {
        op_free(t, idx);
        return QUAY_ENOMEM;
    }
    return 0;
}

/* ---- target side ----------------------------------------------------------------------- */

/* Where to split a copy of len bytes, or 0: not at all. */
static uint64_t split_point(const shm_t *t, uint64_t len)
{
    if (t->split_min == 0 || len < t->split_min || len > UINT64_MAX / SPLIT_SHARE)
        return 0;
    uint64_t s = len * SPLIT_SHARE / 1024 / SPLIT_ALIGN * SPLIT_ALIGN;
    return s < len ? s : 0;
}

static void serve(shm_t *t, int32_t peer, const rdma_req *q)
{
    const quay_transport_sink *k = t->base.sink;
    pid_t pid = t->peers[peer].pid;
    rdma_done d = {q->cookie, 0, 0, 0};
    void *addr = NULL;
    int rc;
    switch (q->op) {
    case QUAY_ACT_RDMA_GET:
    case QUAY_ACT_RDMA_PUT: {
        int get = q->op == QUAY_ACT_RDMA_GET;
        uint64_t len = q->len;
        rc = k->mem_resolve(k->ctx, peer, q->key, q->offset, q->len,
                            get ? QUAY_MEM_READ : QUAY_MEM_WRITE, &addr);
        if (rc != 0)
            break;
        /* The initiator's share first, so that both copy at once. */
        rdma_split sp = {q->cookie, (uint64_t)(uintptr_t)addr, split_point(t, q->len)};
        /* Not while our own actions toward it are in flight: it serves
         * them, both cores copy already (bidirectional traffic). */
        if (t->peers[peer].rdma_out > 0)
            sp.split = 0;
        if (sp.split != 0 && shm_try_ctl(t, peer, SHM_RDMA_SPLIT, &sp, sizeof sp)) {
            len = sp.split;
            d.split = 1;
        }
        rc = vm_copy(pid, addr, q->local, len, get);
        break;
    }
    case QUAY_ACT_RDMA_ATOMIC:
        rc = k->mem_atomic(k->ctx, peer, q->key, q->offset, q->aop, q->operand, q->compare, &d.old);
        break;
    default:
        rc = QUAY_EINVAL;
        break;
    }
    if (rc == VM_GONE)
        return;
    d.status = rc;
    (void)shm_send_ctl(t, peer, SHM_RDMA_DONE, &d, sizeof d);
}

/* ---- initiator side ----------------------------------------------------------------------- */

/* SPLIT: copy this rank's share [split, len) now, while the target copies
 * its own; the status waits in the action for the DONE. */
static void split_copy(shm_t *t, int32_t peer, const rdma_split *s)
{
    qrt_op *o = qrt_op_find(&t->optab, s->cookie, peer); /* NULL: stale or forged */
    if (o == NULL || o->held)
        return;
    if (o->kind == QUAY_ACT_RDMA_ATOMIC || o->split || s->split == 0 || s->split >= o->len) {
        if (o->status == 0)
            o->status = QUAY_EPROTO; /* not a split of this action */
        return;
    }
    o->split = 1;
    int rc = vm_copy(t->peers[peer].pid, (uint8_t *)o->local + s->split, s->remote + s->split,
                     o->len - s->split, o->kind == QUAY_ACT_RDMA_PUT);
    if (rc == VM_GONE)
        rc = QUAY_EPEER; /* its DONE may still be in the ring; else its failure ends it */
    if (o->status == 0)
        o->status = rc;
}

static void finish(shm_t *t, int32_t peer, const rdma_done *d)
{
    qrt_op *o = qrt_op_find(&t->optab, d->cookie, peer); /* NULL: stale or forged */
    if (o == NULL || o->held)
        return;
    uint64_t token = o->token;
    /* The first error wins: this rank's share was copied before. */
    int status = o->status != 0 ? o->status : d->status;
    if (status == 0 && d->split != o->split)
        status = QUAY_EPROTO; /* a share nobody copied */
    if (o->kind == QUAY_ACT_RDMA_ATOMIC && status == 0)
        memcpy(o->local, &d->old, sizeof d->old);
    op_free(t, (uint32_t)(o - t->optab.ops));
    send_waiting(t, peer);
    t->base.sink->op_done(t->base.sink->ctx, token, status);
}

int shm_rdma_record(shm_t *t, int32_t peer, const qshm_rec *rec)
{
    if (rec->type == SHM_RDMA_REQ && rec->len == sizeof(rdma_req)) {
        rdma_req q;
        memcpy(&q, rec->data, sizeof q);
        serve(t, peer, &q);
        return 1;
    }
    if (rec->type == SHM_RDMA_DONE && rec->len == sizeof(rdma_done)) {
        rdma_done d;
        memcpy(&d, rec->data, sizeof d);
        finish(t, peer, &d);
        return 1;
    }
    if (rec->type == SHM_RDMA_SPLIT && rec->len == sizeof(rdma_split)) {
        rdma_split s;
        memcpy(&s, rec->data, sizeof s);
        split_copy(t, peer, &s);
        return 1;
    }
    return 0;
}

void shm_rdma_fail_peer(shm_t *t, int32_t peer)
{
    free_waiting(&t->peers[peer]);
    for (uint32_t i = 0; i < t->optab.nops; i++) {
        const qrt_op *o = &t->optab.ops[i];
        if (!o->used || o->peer != peer)
            continue;
        /* Its DONE will never come: the action ends here, a split one
         * whose share this rank copied (or failed) too. */
        uint64_t token = o->token;
        int status = o->status != 0 ? o->status : QUAY_EPEER;
        op_free(t, i);
        t->base.sink->op_done(t->base.sink->ctx, token, status);
    }
}

void shm_rdma_free(shm_t *t)
{
    for (int32_t r = 0; t->peers != NULL && r < t->base.size; r++)
        free_waiting(&t->peers[r]);
    qrt_optab_fini(&t->optab);
}
