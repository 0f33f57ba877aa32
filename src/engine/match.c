/*
 * match.c — MPI envelope matching with O(1) expected cost for exact keys.
 *
 * Posted receives: exact (ctx, src, tag) receives sit in engine-wide hash
 * bins, FIFO per bin; wildcard receives sit in their communicator's list in
 * post order. Every receive carries a post stamp, so an arrival takes the
 * older of "first exact receive with its key" and "first wildcard receive
 * that matches" (the UCX scheme, keyed by envelope instead of a masked tag).
 *
 * Unexpected messages sit on three lists at once: an engine-wide exact bin,
 * their communicator's arrival-order list and its per-source list. An exact
 * receive looks in its bin, an ANY_TAG receive in the per-source list, an
 * ANY_SOURCE receive walks arrival order. Every list is in arrival order,
 * so the first match found is the oldest: non-overtaking holds.
 *
 * The facade below optionally runs the linear oracle (match_oracle.c) in
 * lockstep and turns any disagreement into a sticky QUAY_EINTERNAL.
 */
#include "engine/internal.h"
#include "engine/match_oracle.h"

static inline uint32_t key_hash(uint64_t seed, uint32_t ctx, int32_t src,
                                int32_t tag)
{
    uint64_t k = ((uint64_t)(uint32_t)src << 32 | (uint32_t)tag) ^ seed ^
                 ((uint64_t)ctx * 0x9e3779b97f4a7c15ull);
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k;
}

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t p = 64;
    while (p < n && p < (1u << 30))
        p <<= 1;
    return p;
}

int match_init(quay_engine *e)
{
    match_state *m = &e->m;
    uint32_t np = pow2_at_least(e->cfg.max_requests);
    uint32_t nu = pow2_at_least(e->cfg.max_unexpected);
    m->seed = e->cfg.seed;
    m->use_fast = !(e->cfg.flags & QUAY_CFG_LINEAR_MATCH);
    m->check = m->use_fast && (e->cfg.flags & QUAY_CFG_CHECK_ORACLE);
    if (m->use_fast) {
        m->posted_bins = qalloc(e, (size_t)np * sizeof(qlink));
        m->unexp_bins = qalloc(e, (size_t)nu * sizeof(qlink));
        if (m->posted_bins == NULL || m->unexp_bins == NULL)
            return QUAY_ENOMEM;
        for (uint32_t i = 0; i < np; i++)
            ql_init(&m->posted_bins[i]);
        for (uint32_t i = 0; i < nu; i++)
            ql_init(&m->unexp_bins[i]);
        m->posted_mask = np - 1;
        m->unexp_mask = nu - 1;
    }
    if (!m->use_fast || m->check) {
        m->oracle = oracle_new(e, e->cfg.max_requests, e->cfg.max_unexpected);
        if (m->oracle == NULL)
            return QUAY_ENOMEM;
    }
    return 0;
}

void match_fini(quay_engine *e)
{
    qfree(e, e->m.posted_bins);
    qfree(e, e->m.unexp_bins);
    oracle_free(e, e->m.oracle);
    e->m.posted_bins = e->m.unexp_bins = NULL;
    e->m.oracle = NULL;
}

static inline int pattern_ok(int32_t psrc, int32_t ptag, int32_t src, int32_t tag)
{
    return (psrc == QUAY_ANY_SOURCE || psrc == src) &&
           (ptag == QUAY_ANY_TAG || ptag == tag);
}

/* ---- fast posted queue -------------------------------------------------------- */

static quay_req *fast_find_posted(match_state *m, quay_comm *c, int32_t src,
                                  int32_t tag)
{
    quay_req *best = NULL;
    qlink *bin = &m->posted_bins[key_hash(m->seed, c->ctx, src, tag) & m->posted_mask];
    for (qlink *n = bin->next; n != bin; n = n->next) {
        quay_req *r = QUAY_CONTAINER_OF(n, quay_req, link);
        if (r->ctx == c->ctx && r->rank == src && r->tag == tag) {
            best = r;
            break;
        }
    }
    if (c->nwild == 0)
        return best;
    for (qlink *n = c->posted_wild.next; n != &c->posted_wild; n = n->next) {
        quay_req *r = QUAY_CONTAINER_OF(n, quay_req, link);
        if (best != NULL && r->stamp > best->stamp)
            break; /* every later wildcard is younger still */
        if (pattern_ok(r->rank, r->tag, src, tag))
            return r;
    }
    return best;
}

static void fast_add_posted(match_state *m, quay_req *r)
{
    if (r->rank == QUAY_ANY_SOURCE || r->tag == QUAY_ANY_TAG) {
        ql_push_tail(&r->comm->posted_wild, &r->link);
        r->comm->nwild++;
        return;
    }
    qlink *bin = &m->posted_bins[key_hash(m->seed, r->ctx, r->rank, r->tag) & m->posted_mask];
    ql_push_tail(bin, &r->link);
}

static void fast_remove_posted(quay_req *r)
{
    if (r->rank == QUAY_ANY_SOURCE || r->tag == QUAY_ANY_TAG)
        r->comm->nwild--;
    ql_remove(&r->link);
}

/* ---- fast unexpected queue ------------------------------------------------------ */

static umsg *fast_find_unexp(match_state *m, quay_comm *c, int32_t src, int32_t tag)
{
    if (src != QUAY_ANY_SOURCE && tag != QUAY_ANY_TAG) {
        qlink *bin = &m->unexp_bins[key_hash(m->seed, c->ctx, src, tag) & m->unexp_mask];
        for (qlink *n = bin->next; n != bin; n = n->next) {
            umsg *u = QUAY_CONTAINER_OF(n, umsg, blink);
            if (u->ctx == c->ctx && u->src == src && u->tag == tag)
                return u;
        }
        return NULL;
    }
    if (src != QUAY_ANY_SOURCE) {
        qlink *h = &c->unexp_src[src];
        for (qlink *n = h->next; n != h; n = n->next) {
            umsg *u = QUAY_CONTAINER_OF(n, umsg, slink);
            if (tag == QUAY_ANY_TAG || u->tag == tag)
                return u;
        }
        return NULL;
    }
    for (qlink *n = c->unexp_all.next; n != &c->unexp_all; n = n->next) {
        umsg *u = QUAY_CONTAINER_OF(n, umsg, alink);
        if (tag == QUAY_ANY_TAG || u->tag == tag)
            return u;
    }
    return NULL;
}

static void fast_add_unexp(match_state *m, quay_comm *c, umsg *u)
{
    qlink *bin = &m->unexp_bins[key_hash(m->seed, c->ctx, u->src, u->tag) & m->unexp_mask];
    ql_push_tail(bin, &u->blink);
    ql_push_tail(&c->unexp_all, &u->alink);
    ql_push_tail(&c->unexp_src[u->src], &u->slink);
}

static void fast_remove_unexp(umsg *u)
{
    ql_remove(&u->blink);
    ql_remove(&u->alink);
    ql_remove(&u->slink);
}

/* ---- facade: fast, oracle, or both in lockstep ------------------------------------ */

static void mismatch(quay_engine *e)
{
    if (!e->fatal)
        e->fatal = QUAY_EINTERNAL;
}

quay_req *match_find_posted(quay_engine *e, quay_comm *c, int32_t src,
                            int32_t tag)
{
    match_state *m = &e->m;
    if (!m->use_fast)
        return oracle_find_posted(m->oracle, c->ctx, src, tag);
    quay_req *r = fast_find_posted(m, c, src, tag);
    if (m->check && r != oracle_find_posted(m->oracle, c->ctx, src, tag))
        mismatch(e);
    return r;
}

void match_add_posted(quay_engine *e, quay_req *r)
{
    r->stamp = ++e->stamp;
    if (e->m.use_fast)
        fast_add_posted(&e->m, r);
    if (e->m.oracle != NULL)
        oracle_add_posted(e->m.oracle, r);
}

void match_remove_posted(quay_engine *e, quay_req *r)
{
    if (e->m.use_fast)
        fast_remove_posted(r);
    if (e->m.oracle != NULL)
        oracle_remove_posted(e->m.oracle, r);
}

umsg *match_find_unexp(quay_engine *e, quay_comm *c, int32_t src, int32_t tag)
{
    match_state *m = &e->m;
    if (!m->use_fast)
        return oracle_find_unexp(m->oracle, c->ctx, src, tag);
    umsg *u = fast_find_unexp(m, c, src, tag);
    if (m->check && u != oracle_find_unexp(m->oracle, c->ctx, src, tag))
        mismatch(e);
    return u;
}

void match_add_unexp(quay_engine *e, quay_comm *c, umsg *u)
{
    u->where = UM_UNEXP;
    u->comm = c;
    c->nunexp++;
    if (e->m.use_fast)
        fast_add_unexp(&e->m, c, u);
    if (e->m.oracle != NULL)
        oracle_add_unexp(e->m.oracle, u);
}

void match_remove_unexp(quay_engine *e, umsg *u)
{
    u->comm->nunexp--;
    if (e->m.use_fast)
        fast_remove_unexp(u);
    if (e->m.oracle != NULL)
        oracle_remove_unexp(e->m.oracle, u);
}
