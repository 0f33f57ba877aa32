/*
 * lock.c — a distributed queue lock (MCS) on remote atomics [NIC ch. 5].
 *
 * The lock word (8 bytes, at its home rank) holds the last requester's
 * rank + 1, or 0. Every member owns a record {next, locked} in its own
 * registered memory. Ranks are stored + 1 so that 0 means none.
 *
 *   acquire(p): next[p] = 0; locked[p] = 1 (before linking);
 *               pred = swap(lock, p + 1);
 *               pred == 0: held. Else write next[pred - 1] = p + 1, then
 *               wait until locked[p] == 0 (a local word: no traffic).
 *   release(p): next[p] != 0: write locked[next - 1] = 0.
 *               Else old = cas(lock, p + 1 -> 0): old == p + 1: free.
 *               Else a successor swapped in but has not linked yet: wait
 *               until next[p] != 0, then write its locked = 0.
 *
 * Every step is a non-blocking state: quay_lock_test advances it after
 * the engine made progress (the waits read local memory that peers write
 * with RDMA puts). The remote writes are quay_iput of 8 bytes; the swap
 * and compare-and-swap are quay_iatomic.
 */
#include "collectives/coll.h"

enum {
    LK_IDLE = 0,
    LK_ACQ_SWAP, /* swap on the lock word in flight */
    LK_ACQ_TOLINK, /* to write next[pred] (no request free yet) */
    LK_ACQ_LINK, /* writing next[pred] */
    LK_ACQ_WAIT, /* waiting for locked[me] == 0 */
    LK_HELD,
    LK_REL_CAS,  /* cas on the lock word in flight */
    LK_REL_WAIT, /* waiting for next[me] != 0 */
    LK_REL_TOPASS, /* to write locked[next] = 0 */
    LK_REL_PASS, /* writing locked[next] = 0 */
    LK_FAILED
};

static uint64_t rec_word(const quay_lock *l, int i)
{
    uint64_t v;
    memcpy(&v, (const uint8_t *)l->mine + 8 * (size_t)i, sizeof v);
    return v;
}

static void rec_set(quay_lock *l, int i, uint64_t v)
{
    memcpy((uint8_t *)l->mine + 8 * (size_t)i, &v, sizeof v);
}

int quay_lock_init(quay_lock *l, quay_engine *e, int32_t home, uint64_t lock_key,
                   uint64_t lock_off, const quay_lock_rec *recs, void *mine)
{
    if (l == NULL || e == NULL || recs == NULL || mine == NULL || home < 0 ||
        home >= quay_engine_size(e))
        return QUAY_EINVAL;
    memset(l, 0, sizeof *l);
    l->e = e;
    l->me = quay_engine_rank(e);
    l->home = home;
    l->lock_key = lock_key;
    l->lock_off = lock_off;
    l->recs = recs;
    l->mine = mine;
    rec_set(l, 0, 0);
    rec_set(l, 1, 0);
    return 0;
}

/* The operation in flight is done: 1 (its status in *err), else 0. */
static int op_done(quay_lock *l, int *err)
{
    quay_status st;
    if (!quay_req_test(l->op, &st))
        return 0;
    quay_req_free(l->e, l->op);
    l->op = NULL;
    *err = st.error;
    return 1;
}

/* Write v into word i of rank p's record. */
static int put_word(quay_lock *l, int32_t p, int i, uint64_t v)
{
    l->val = v;
    return quay_iput(l->e, p, &l->val, sizeof l->val, l->recs[p].key,
                     l->recs[p].offset + 8 * (uint64_t)i, &l->op);
}

int quay_lock_acquire(quay_lock *l)
{
    if (l == NULL)
        return QUAY_EINVAL;
    if (l->state != LK_IDLE)
        return QUAY_EBUSY;
    rec_set(l, 0, 0); /* next: nobody yet */
    rec_set(l, 1, 1); /* locked, until a predecessor says otherwise */
    int rc = quay_iatomic(l->e, l->home, QUAY_ATOMIC_SWAP, l->lock_key, l->lock_off,
                          (uint64_t)l->me + 1, 0, &l->result, &l->op);
    if (rc != 0)
        return rc;
    l->state = LK_ACQ_SWAP;
    return 0;
}

int quay_lock_release(quay_lock *l)
{
    if (l == NULL)
        return QUAY_EINVAL;
    if (l->state != LK_HELD)
        return QUAY_EBUSY;
    uint64_t next = rec_word(l, 0);
    int rc;
    if (next != 0) {
        rc = put_word(l, (int32_t)(next - 1), 1, 0);
        l->state = LK_REL_PASS;
    } else {
        rc = quay_iatomic(l->e, l->home, QUAY_ATOMIC_CAS, l->lock_key, l->lock_off, 0,
                          (uint64_t)l->me + 1, &l->result, &l->op);
        l->state = LK_REL_CAS;
    }
    if (rc != 0)
        l->state = LK_HELD; /* nothing started: still held */
    return rc;
}

int quay_lock_test(quay_lock *l)
{
    if (l == NULL)
        return QUAY_EINVAL;
    int err = 0, rc;
    switch (l->state) {
    case LK_ACQ_SWAP:
        if (!op_done(l, &err))
            return 0;
        if (err != 0)
            break;
        if (l->result == 0) {
            l->state = LK_HELD;
            return 1;
        }
        if (l->result > (uint64_t)quay_engine_size(l->e)) {
            err = QUAY_EPROTO; /* the lock word holds no rank */
            break;
        }
        l->peer = (int32_t)(l->result - 1);
        l->state = LK_ACQ_TOLINK;
        /* fall through */
    case LK_ACQ_TOLINK:
        rc = put_word(l, l->peer, 0, (uint64_t)l->me + 1);
        if (rc == QUAY_EAGAIN)
            return 0;
        if (rc != 0) {
            err = rc;
            break;
        }
        l->state = LK_ACQ_LINK;
        return 0;
    case LK_ACQ_LINK:
        if (!op_done(l, &err))
            return 0;
        if (err != 0)
            break;
        l->state = LK_ACQ_WAIT;
        /* fall through */
    case LK_ACQ_WAIT:
        if (rec_word(l, 1) != 0)
            return 0;
        l->state = LK_HELD;
        return 1;
    case LK_REL_CAS:
        if (!op_done(l, &err))
            return 0;
        if (err != 0)
            break;
        if (l->result == (uint64_t)l->me + 1) {
            l->state = LK_IDLE; /* nobody was waiting */
            return 1;
        }
        l->state = LK_REL_WAIT;
        /* fall through */
    case LK_REL_WAIT: {
        uint64_t next = rec_word(l, 0);
        if (next == 0)
            return 0; /* the successor has not linked itself yet */
        if (next > (uint64_t)quay_engine_size(l->e)) {
            err = QUAY_EPROTO;
            break;
        }
        l->peer = (int32_t)(next - 1);
        l->state = LK_REL_TOPASS;
    }
        /* fall through */
    case LK_REL_TOPASS:
        rc = put_word(l, l->peer, 1, 0);
        if (rc == QUAY_EAGAIN)
            return 0;
        if (rc != 0) {
            err = rc;
            break;
        }
        l->state = LK_REL_PASS;
        return 0;
    case LK_REL_PASS:
        if (!op_done(l, &err))
            return 0;
        if (err != 0)
            break;
        l->state = LK_IDLE;
        return 1;
    case LK_HELD:
    case LK_IDLE:
        return 1;
    default:
        return QUAY_EPEER;
    }
    l->state = LK_FAILED;
    return err;
}
