/*
 * allreduce.c — allreduce schedules: recursive doubling (any op, rank
 * order kept), Rabenseifner's reduce-scatter by recursive halving +
 * allgather by recursive doubling, and the ring (both commutative only).
 *
 * Rank counts that are not a power of two: the first 2 rem ranks (rem =
 * n - pof2) fold in pairs first (even rank r hands its vector to r + 1,
 * which reduces x_r op x_(r+1) and stands for both as rank r / 2; the
 * others are rank r - rem), and the odd ones hand the result back at the
 * end. The renumbering keeps rank order. Sub-tags: 0 fold, 1 hand back,
 * 2 + k rounds.
 */
#include "collectives/algs.h"

#include "collectives/ops.h"

#define ROUND_TAG(k) (2u + (uint32_t)(k))
#define ROUND_TAG2(k) (2u + 32u + (uint32_t)(k)) /* second phase */

typedef struct fold {
    int32_t pof2, rem, newrank; /* newrank -1: folded away */
    uint32_t last;              /* the step the rounds come after */
    uint32_t handed;            /* even folded rank: its hand-in send */
} fold;

static int32_t real_of(const fold *f, int32_t newr)
{
    return newr < f->rem ? newr * 2 + 1 : newr + f->rem;
}

/* The vector starts in rbuf (copied from sbuf unless in place); fold the
 * first 2 rem ranks. tmp slot 0 takes an odd rank's partner's vector. */
static fold fold_in(coll_sched *s, size_t count, int in_place)
{
    int32_t n = s->size, r = s->rank;
    size_t len = count * s->esize;
    fold f = {1, 0, 0, CS_NONE, CS_NONE};
    while (f.pof2 * 2 <= n)
        f.pof2 *= 2;
    f.rem = n - f.pof2;
    if (!in_place)
        f.last = cs_copy(s, CB_RECV, 0, CB_SEND, 0, len);
    if (r < 2 * f.rem && r % 2 == 0) {
        f.handed = cs_send(s, r + 1, CB_RECV, 0, len, 0);
        cs_dep(s, f.last, f.handed);
        f.newrank = -1;
    } else if (r < 2 * f.rem) {
        uint32_t rcv = cs_recv(s, r - 1, CB_TMP, 0, len, 0);
        uint32_t red = cs_reduce(s, CB_TMP, 0, CB_RECV, 0, count); /* x_(r-1) op x_r */
        cs_dep(s, rcv, red);
        cs_dep(s, f.last, red);
        f.last = red;
        f.newrank = r / 2;
    } else {
        f.newrank = r - f.rem;
    }
    return f;
}

/* Hand the result back to the folded-away partner (after `last`). */
static void fold_out(coll_sched *s, const fold *f, size_t len, uint32_t last)
{
    int32_t r = s->rank;
    if (f->newrank < 0)
        cs_dep(s, f->handed, cs_recv(s, r + 1, CB_RECV, 0, len, 1)); /* rbuf was sent */
    else if (r < 2 * f->rem)
        cs_dep(s, last, cs_send(s, r - 1, CB_RECV, 0, len, 1));
}

/* Round k exchanges the whole vector with newrank XOR 2^k. The lower
 * partner's vector is the left operand: for a non-commutative op the
 * result is reduced into whichever buffer holds the right one, and the
 * running result moves there (into a fresh tmp slot per round). */
void coll_allreduce_recursive_doubling(coll_sched *s, const coll_args *a)
{
    size_t count = a->count;
    int in_place = a->in_place;
    size_t len = count * s->esize;
    fold f = fold_in(s, count, in_place);
    int commutative = op_commutative(&s->op);
    uint32_t last = f.last;
    if (f.newrank >= 0) {
        int rounds = 0;
        while (((int32_t)1 << rounds) < f.pof2)
            rounds++;
        sched_tmp(s, (size_t)(rounds + 1) * len);
        int acc_buf = CB_RECV;
        size_t acc_off = 0;
        for (int k = 0; k < rounds; k++) {
            int32_t dst = real_of(&f, f.newrank ^ ((int32_t)1 << k));
            size_t slot = (size_t)(k + 1) * len;
            uint32_t snd = cs_send(s, dst, acc_buf, acc_off, len, ROUND_TAG(k));
            uint32_t rcv = cs_recv(s, dst, CB_TMP, slot, len, ROUND_TAG(k));
            uint32_t red;
            if (commutative || dst < s->rank) {
                red = cs_reduce(s, CB_TMP, slot, acc_buf, acc_off, count);
            } else {
                red = cs_reduce(s, acc_buf, acc_off, CB_TMP, slot, count);
                acc_buf = CB_TMP;
                acc_off = slot;
            }
            /* The send reads the running result the reduce replaces. */
            cs_dep(s, last, snd);
            cs_dep(s, snd, red);
            cs_dep(s, rcv, red);
            cs_dep(s, last, red);
            last = red;
        }
        if (acc_buf != CB_RECV) {
            uint32_t cp = cs_copy(s, CB_RECV, 0, acc_buf, acc_off, len);
            cs_dep(s, last, cp);
            last = cp;
        }
    } else {
        sched_tmp(s, len);
    }
    fold_out(s, &f, len, last);
}

/* Element counts and offsets of nb blocks of a count-element vector. */
static int blocks(coll_sched *s, size_t count, int32_t nb, size_t **cnt, size_t **disp)
{
    *cnt = qalloc(s->e, (size_t)nb * sizeof **cnt);
    *disp = qalloc(s->e, ((size_t)nb + 1) * sizeof **disp);
    if (*cnt == NULL || *disp == NULL) {
        qfree(s->e, *cnt); /* (one of them may have been allocated) */
        qfree(s->e, *disp);
        *cnt = *disp = NULL;
        s->err = QUAY_EAGAIN;
        return -1;
    }
    size_t at = 0;
    for (int32_t i = 0; i < nb; i++) {
        (*cnt)[i] = count / (size_t)nb + ((size_t)i < count % (size_t)nb);
        (*disp)[i] = at;
        at += (*cnt)[i];
    }
    (*disp)[nb] = at;
    return 0;
}

/* Elements of blocks [lo, hi). */
static size_t span(const size_t *disp, int32_t lo, int32_t hi) { return disp[hi] - disp[lo]; }

/* Reduce-scatter by recursive halving: round k keeps the half of the
 * current range on the partner's side of newrank's bit, sends the other
 * half, reduces the kept half; then allgather by recursive doubling in
 * reverse. Ranges are kept as block indices over pof2 blocks. Each
 * round's receive, of both halves, has a tmp region of its own (after the
 * fold's, which takes the first len bytes; each half's regions add up to
 * less than len more), so every round's receive is posted at the start: a
 * partner's message for a later round matches on arrival instead of
 * waiting in the unexpected room, where with small pools it could hold the
 * room an earlier round's message needs (fuzz/RESULTS.md, bug 23). An
 * allgather round's data belongs where the reduce-scatter round with the
 * same partner sent from: it is copied there once that send is done. */
void coll_allreduce_rabenseifner(coll_sched *s, const coll_args *a)
{
    size_t count = a->count;
    int in_place = a->in_place;
    size_t es = s->esize, len = count * es;
    fold f = fold_in(s, count, in_place);
    uint32_t last = f.last;
    size_t region = len; /* the next round's tmp region */
    sched_tmp(s, len);
    if (f.newrank >= 0) {
        size_t *cnt, *disp;
        if (blocks(s, count, f.pof2, &cnt, &disp) != 0)
            return;
        uint32_t rs_snd[32]; /* round k's send, which reads what round
                                rounds - 1 - k of the allgather brings */
        int32_t lo = 0, hi = f.pof2; /* the range this rank still owns */
        int k = 0;
        for (int32_t half = f.pof2 / 2; half >= 1; half /= 2, k++) {
            int32_t partner = f.newrank ^ half;
            int32_t mid = lo + (hi - lo) / 2;
            int keep_low = f.newrank < partner;
            int32_t slo = keep_low ? mid : lo, shi = keep_low ? hi : mid;
            int32_t rlo = keep_low ? lo : mid, rhi = keep_low ? mid : hi;
            int32_t dst = real_of(&f, partner);
            uint32_t snd = cs_send(s, dst, CB_RECV, disp[slo] * es, span(disp, slo, shi) * es,
                                   ROUND_TAG(k));
            size_t rlen = span(disp, rlo, rhi) * es;
            uint32_t rcv = cs_recv(s, dst, CB_TMP, region, rlen, ROUND_TAG(k));
            uint32_t red = cs_reduce(s, CB_TMP, region, CB_RECV, disp[rlo] * es,
                                     span(disp, rlo, rhi));
            cs_dep(s, last, snd);
            cs_dep(s, rcv, red);
            cs_dep(s, last, red); /* the kept half was reduced last round */
            rs_snd[k] = snd;
            last = red;
            lo = rlo;
            hi = rhi;
            region += rlen;
        }
        /* Allgather: undo the halvings, last first. Round kk's partner is
         * reduce-scatter round rounds - 1 - kk's, and sends the range this
         * rank sent it then: received into a region of its own (so posted at
         * the start), copied into place once that send no longer reads it.
         * (Received in place, the receives had to wait for the sends, and
         * a partner already in the allgather had its messages kept as
         * unexpected meanwhile.) */
        int rounds = k, kk = 0;
        for (int32_t half = 1; half < f.pof2; half *= 2, kk++) {
            int32_t partner = f.newrank ^ half;
            int32_t size = hi - lo;
            int32_t plo = f.newrank < partner ? hi : lo - size;
            int32_t dst = real_of(&f, partner);
            size_t plen = span(disp, plo, plo + size) * es;
            uint32_t snd = cs_send(s, dst, CB_RECV, disp[lo] * es, span(disp, lo, hi) * es,
                                   ROUND_TAG2(kk));
            uint32_t rcv = cs_recv(s, dst, CB_TMP, region, plen, ROUND_TAG2(kk));
            uint32_t cp = cs_copy(s, CB_RECV, disp[plo] * es, CB_TMP, region, plen);
            cs_dep(s, last, snd);
            cs_dep(s, rcv, cp);
            cs_dep(s, rs_snd[rounds - 1 - kk], cp);
            last = cs_after(s, last, cp); /* the next send has all of it */
            region += plen;
            if (plo < lo)
                lo = plo;
            else
                hi = plo + size;
        }
        sched_tmp(s, region);
        qfree(s->e, cnt);
        qfree(s->e, disp);
    }
    fold_out(s, &f, len, last);
}

/* The halves reorder operands (a non-commutative op: the registry's
 * fallback, recursive doubling). */
int coll_allreduce_rabenseifner_usable(const coll_args *a)
{
    return a->commutative;
}

/* Ring: n blocks; reduce-scatter in n - 1 steps (step j sends block r - j
 * right, receives block r - j - 1 from the left and reduces it), then
 * allgather in n - 1 steps (step j sends block r + 1 - j, receives block
 * r - j). */
void coll_allreduce_ring(coll_sched *s, const coll_args *a)
{
    size_t count = a->count;
    int in_place = a->in_place;
    int32_t n = s->size, r = s->rank;
    size_t es = s->esize, len = count * es;
    size_t *cnt, *disp;
    if (blocks(s, count, n, &cnt, &disp) != 0)
        return;
    uint32_t *rs_snd = qalloc(s->e, (size_t)n * sizeof *rs_snd);
    if (rs_snd == NULL) {
        qfree(s->e, cnt);
        qfree(s->e, disp);
        s->err = QUAY_EAGAIN;
        return;
    }
    /* tmp: the reduce-scatter's receives in [0, len), the allgather's in
     * [len, 2 len), each block at its own offset */
    sched_tmp(s, 2 * len);
    int32_t right = (r + 1) % n, left = (r + n - 1) % n;
    uint32_t init = in_place ? CS_NONE : cs_copy(s, CB_RECV, 0, CB_SEND, 0, len);
    uint32_t last = init;
    for (int32_t j = 0; j < n - 1; j++) {
        int32_t sb = (r - j + n) % n, rb = (r - j - 1 + n) % n;
        uint32_t snd = cs_send(s, right, CB_RECV, disp[sb] * es, cnt[sb] * es, (uint32_t)j);
        uint32_t rcv = cs_recv(s, left, CB_TMP, disp[rb] * es, cnt[rb] * es, (uint32_t)j);
        uint32_t red = cs_reduce(s, CB_TMP, disp[rb] * es, CB_RECV, disp[rb] * es, cnt[rb]);
        cs_dep(s, last, snd);
        cs_dep(s, rcv, red);
        cs_dep(s, init, red);
        cs_dep(s, last, red);
        rs_snd[j] = snd;
        last = red;
    }
    /* Allgather: step j brings block r - j, which reduce-scatter step j
     * sent from (after step j - 1 reduced into it). Received into a tmp
     * region of its own, so posted at the start, and copied into place
     * once that send is done. (Received in place, every receive had to
     * wait for every reduce-scatter send, and a left neighbour already in
     * the allgather had its messages kept as unexpected meanwhile: with
     * small pools, the room cycle of fuzz/RESULTS.md bug 24.) */
    for (int32_t j = 0; j < n - 1; j++) {
        int32_t sb = (r + 1 - j + n) % n, rb = (r - j + n) % n;
        uint32_t snd = cs_send(s, right, CB_RECV, disp[sb] * es, cnt[sb] * es,
                               (uint32_t)(n - 1 + j));
        uint32_t rcv = cs_recv(s, left, CB_TMP, len + disp[rb] * es, cnt[rb] * es,
                               (uint32_t)(n - 1 + j));
        uint32_t cp = cs_copy(s, CB_RECV, disp[rb] * es, CB_TMP, len + disp[rb] * es,
                              cnt[rb] * es);
        cs_dep(s, last, snd);
        cs_dep(s, rcv, cp);
        cs_dep(s, rs_snd[j], cp);
        last = cs_after(s, last, cp); /* the next step sends exactly this block */
    }
    qfree(s->e, rs_snd);
    qfree(s->e, cnt);
    qfree(s->e, disp);
}

/* It reorders operands, and takes a sub-tag per step, 2(n - 1) of them
 * (otherwise: the registry's fallback, Rabenseifner's). */
int coll_allreduce_ring_usable(const coll_args *a)
{
    return a->commutative && 2 * (uint64_t)a->size - 2 <= CS_SUBTAG_MAX;
}

/* ---- the call ------------------------------------------------------------------- */

static uint32_t allreduce_configured(const quay_config *c) { return c->coll_allreduce; }

static int allreduce_check(const quay_engine *e, const quay_offload *d)
{
    (void)e;
    if (op_check(&d->op, d->dt) != 0 || (d->count != 0 && d->rbuf == NULL))
        return QUAY_EINVAL;
    return coll_reduce_post_check(d, 1);
}

static int32_t pof2_below(int32_t n)
{
    int32_t p = 1;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

/* (A non-commutative op ends at recursive doubling by the fallbacks: the
 * split algorithms reorder operands.) */
static uint32_t allreduce_choose(const coll_args *a)
{
    /* Short: log n rounds of the whole vector beat any split. Long:
     * Rabenseifner moves 2 len per rank in 2 log n rounds; the ring moves
     * as much in 2(n - 1) rounds, worth it only for few ranks. */
    size_t bytes = a->count * a->esize;
    if (bytes <= 2048 || a->count < (size_t)pof2_below(a->size))
        return QUAY_ALLREDUCE_RECURSIVE_DOUBLING;
    if (a->size <= 8 && bytes >= 1048576)
        return QUAY_ALLREDUCE_RING;
    return QUAY_ALLREDUCE_RABENSEIFNER;
}

const coll_op coll_op_allreduce = {
    .kind = QUAY_OFF_ALLREDUCE,
    .name = "allreduce",
    .configured = allreduce_configured,
    .check = allreduce_check,
    .args = coll_reduce_fill_args,
    .bind = coll_reduce_bind,
    .choose = allreduce_choose,
    .trivial = coll_reduce_trivial,
    .counted = 1,
};

int quay_iallreduce(quay_engine *e, quay_comm *c, const void *sbuf, void *rbuf, size_t count,
                    quay_dtype dt, const quay_op *op, quay_req **req)
{
    int rc = coll_reduce_args(e, c, sbuf, rbuf, count, dt, op, 1, req);
    if (rc != 0)
        return rc;
    quay_offload d = {.sbuf = sbuf, .rbuf = rbuf, .count = count, .dt = dt, .op = *op};
    return coll_call(e, c, &coll_op_allreduce, &d, req);
}
