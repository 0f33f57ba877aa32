/*
 * barrier.c — barrier schedules: dissemination, pairwise exchange [NIC
 * ch. 3 "PE"] and gather-broadcast over a tree [NIC ch. 3 "GB"]. Every
 * message is zero bytes; the sub-tag is the round.
 */
#include "collectives/algs.h"

/* Round k: send to r + 2^k, receive from r - 2^k (mod n). A round's send
 * waits for the previous round's receive: that is what carries the news
 * that everyone before has arrived. */
void coll_barrier_dissemination(coll_sched *s, const coll_args *a)
{
    (void)a;
    int32_t n = s->size, r = s->rank;
    uint32_t prev = CS_NONE;
    for (uint32_t k = 0; ((int64_t)1 << k) < n; k++) {
        int32_t d = (int32_t)((int64_t)1 << k);
        uint32_t snd = cs_send(s, (r + d) % n, CB_RECV, 0, 0, k);
        uint32_t rcv = cs_recv(s, (r - d + n) % n, CB_RECV, 0, 0, k);
        cs_dep(s, prev, snd);
        /* (receives are posted early and may finish out of round order:
         * a send says that every earlier round was heard) */
        prev = cs_after(s, prev, rcv);
    }
}

/* Ranks below the largest power of two S exchange with rank XOR 2^k; a
 * rank r >= S first hands in to r - S and is released by it at the end
 * (sub-tags 0 and 1; rounds from 2). */
void coll_barrier_pairwise(coll_sched *s, const coll_args *a)
{
    (void)a;
    int32_t n = s->size, r = s->rank, S = 1;
    while (S * 2 <= n)
        S *= 2;
    if (r >= S) {
        cs_send(s, r - S, CB_RECV, 0, 0, 0);
        cs_recv(s, r - S, CB_RECV, 0, 0, 1);
        return;
    }
    uint32_t prev = CS_NONE;
    if (r + S < n)
        prev = cs_recv(s, r + S, CB_RECV, 0, 0, 0);
    for (uint32_t k = 0; ((int32_t)1 << k) < S; k++) {
        int32_t p = r ^ ((int32_t)1 << k);
        uint32_t snd = cs_send(s, p, CB_RECV, 0, 0, 2 + k);
        uint32_t rcv = cs_recv(s, p, CB_RECV, 0, 0, 2 + k);
        cs_dep(s, prev, snd); /* the receive may wait posted */
        prev = cs_after(s, prev, rcv);
    }
    if (r + S < n)
        cs_dep(s, prev, cs_send(s, r + S, CB_RECV, 0, 0, 1));
}

/* Gather up a d-ary tree rooted at 0 (children d r + 1 .. d r + d), then
 * broadcast the release down it. */
void coll_barrier_tree(coll_sched *s, const coll_args *a)
{
    uint32_t d = a->degree;
    int32_t n = s->size, r = s->rank;
    uint32_t up = cs_join(s);
    for (uint32_t k = 1; k <= d; k++) {
        int64_t ch = (int64_t)r * d + k;
        if (ch >= n)
            break;
        cs_dep(s, cs_recv(s, (int32_t)ch, CB_RECV, 0, 0, 0), up);
    }
    uint32_t down = up;
    if (r != 0) {
        int32_t parent = (int32_t)((r - 1) / (int32_t)d);
        cs_dep(s, up, cs_send(s, parent, CB_RECV, 0, 0, 0));
        down = cs_recv(s, parent, CB_RECV, 0, 0, 1);
    }
    for (uint32_t k = 1; k <= d; k++) {
        int64_t ch = (int64_t)r * d + k;
        if (ch >= n)
            break;
        cs_dep(s, down, cs_send(s, (int32_t)ch, CB_RECV, 0, 0, 1));
    }
}

/* ---- the call ------------------------------------------------------------------- */

static uint32_t barrier_configured(const quay_config *c) { return c->coll_barrier; }

/* ceil(log2 n) rounds for any n. */
static uint32_t barrier_choose(const coll_args *a)
{
    (void)a;
    return QUAY_BARRIER_DISSEMINATION;
}

/* (No root, buffers or reduction: nothing to check, fill or bind.) */
const coll_op coll_op_barrier = {
    .kind = QUAY_OFF_BARRIER,
    .name = "barrier",
    .configured = barrier_configured,
    .choose = barrier_choose,
};

int quay_ibarrier(quay_engine *e, quay_comm *c, quay_req **req)
{
    int rc = coll_call_args(e, c, req);
    if (rc != 0)
        return rc;
    quay_offload d;
    memset(&d, 0, sizeof d); /* (a barrier has no arguments) */
    return coll_call(e, c, &coll_op_barrier, &d, req);
}
