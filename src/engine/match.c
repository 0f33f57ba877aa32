/*
 * match.c — MPI envelope matching, O(1) expected cost for every receive
 * pattern at any queue depth.
 *
 * Posted receives. A receive's pattern (ctx, src, tag) may have a wildcard
 * in src, tag, or both. Exact receives AND single-wildcard receives sit in
 * engine-wide hash bins keyed by their pattern, with the wildcard field
 * stored as -1 (no real rank or tag is -1, so keys never collide in
 * meaning); (ANY, ANY) receives sit on their communicator's list. All are
 * FIFO and carry a post stamp. An arrival (ctx, s, t) has at most four
 * candidate queues — (s, t), (ANY, t), (s, ANY), (ANY, ANY) — and the
 * first entry of each that carries that exact pattern matches; it takes the
 * oldest of those heads. Queues of a kind the communicator has none of are
 * skipped, so exact-only traffic pays one bin lookup. (UCX keeps one
 * wildcard list and walks it; that costs O(wildcards) per arrival.)
 *
 * Unexpected messages sit on up to four lists at once: the (ctx, src, tag)
 * bin, the (ctx, tag) bin, their communicator's per-source list and its
 * arrival-order list. Each receive pattern reads the head of one list:
 * exact → (ctx, src, tag) bin, (ANY, t) → (ctx, tag) bin, (s, ANY) →
 * per-source list, (ANY, ANY) → arrival list. Every list is in arrival
 * order, so the first match found is the oldest: non-overtaking holds.
 * Bins are shared by colliding keys, so a bin walk skips other keys;
 * expected length O(1) with the seeded hash. The (ctx, tag) bins and the
 * per-source lists are made for a communicator at its first lookup that
 * needs them (from its arrival list, in order) and kept from then on:
 * traffic that never uses a wildcard pays for two lists per message.
 *
 * The facade below optionally runs the linear oracle (match_oracle.c) in
 * lockstep and turns any disagreement into a sticky QUAY_EINTERNAL.
 */
#include "engine/internal.h"
#include "engine/match_fast.h"
#include "engine/match_oracle.h"

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t p = 64;
    while (p < n && p < (1u << 30))
        p <<= 1;
    return p;
}

static qlink *bins_new(quay_engine *e, uint32_t n)
{
    qlink *b = qalloc(e, (size_t)n * sizeof(qlink));
    if (b != NULL)
        for (uint32_t i = 0; i < n; i++)
            ql_init(&b[i]);
    return b;
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
        m->posted_bins = bins_new(e, np);
        m->unexp_bins = bins_new(e, nu);
        m->unexp_tbins = bins_new(e, nu);
        if (!m->posted_bins || !m->unexp_bins || !m->unexp_tbins)
            return QUAY_ENOMEM;
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
    qfree(e, e->m.unexp_tbins);
    oracle_free(e, e->m.oracle);
    e->m.posted_bins = e->m.unexp_bins = e->m.unexp_tbins = NULL;
    e->m.oracle = NULL;
}

void match_reset(quay_engine *e)
{
    match_state *m = &e->m;
    if (m->use_fast) {
        for (uint32_t i = 0; i <= m->posted_mask; i++)
            ql_init(&m->posted_bins[i]);
        for (uint32_t i = 0; i <= m->unexp_mask; i++) {
            ql_init(&m->unexp_bins[i]);
            ql_init(&m->unexp_tbins[i]);
        }
    }
    if (m->oracle != NULL)
        oracle_clear(m->oracle);
}

/* ---- fast posted queue -------------------------------------------------------- */

static inline quay_req *older(quay_req *a, quay_req *b)
{
    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    return b->stamp < a->stamp ? b : a;
}

static quay_req *fast_find_posted(match_state *m, quay_comm *c, int32_t src,
                                  int32_t tag)
{
    quay_req *best = match_bin_head(m, c, src, tag);
    if (c->n_anysrc != 0)
        best = older(best, match_bin_head(m, c, QUAY_ANY_SOURCE, tag));
    if (c->n_anytag != 0)
        best = older(best, match_bin_head(m, c, src, QUAY_ANY_TAG));
    if (c->nwild != 0)
        best = older(best, QUAY_CONTAINER_OF(c->posted_wild.next, quay_req, link));
    return best;
}

static void fast_add_posted(match_state *m, quay_req *r)
{
    quay_comm *c = r->comm;
    if (r->rank == QUAY_ANY_SOURCE && r->tag == QUAY_ANY_TAG) {
        ql_push_tail(&c->posted_wild, &r->link);
        c->nwild++;
        return;
    }
    if (r->rank == QUAY_ANY_SOURCE)
        c->n_anysrc++;
    else if (r->tag == QUAY_ANY_TAG)
        c->n_anytag++;
    ql_push_tail(match_posted_bin(m, c, r->rank, r->tag), &r->link);
}

static void fast_remove_posted(quay_req *r)
{
    quay_comm *c = r->comm;
    if (r->rank == QUAY_ANY_SOURCE && r->tag == QUAY_ANY_TAG)
        c->nwild--;
    else if (r->rank == QUAY_ANY_SOURCE)
        c->n_anysrc--;
    else if (r->tag == QUAY_ANY_TAG)
        c->n_anytag--;
    ql_remove(&r->link);
}

/* ---- fast unexpected queue ------------------------------------------------------ */

/* The (ctx, tag) bins and the per-source lists, made for c at its first
 * lookup of that kind: its unexpected messages in arrival order, so each
 * list is in arrival order as if it had been kept all along. Until then
 * an arrival pays for two lists, not four. */
static void index_by_tag(match_state *m, quay_comm *c)
{
    for (qlink *n = c->unexp_all.next; n != &c->unexp_all; n = n->next) {
        umsg *u = QUAY_CONTAINER_OF(n, umsg, alink);
        ql_push_tail(&m->unexp_tbins[match_key_hash(m->seed, c->ctx, QUAY_ANY_SOURCE, u->tag) &
                                     m->unexp_mask],
                     &u->tlink);
    }
    c->unexp_by_tag = 1;
}

static void index_by_src(quay_comm *c)
{
    for (qlink *n = c->unexp_all.next; n != &c->unexp_all; n = n->next) {
        umsg *u = QUAY_CONTAINER_OF(n, umsg, alink);
        ql_push_tail(&c->unexp_src[u->src], &u->slink);
    }
    c->unexp_by_src = 1;
}

static umsg *fast_find_unexp(match_state *m, quay_comm *c, int32_t src, int32_t tag)
{
    if (src != QUAY_ANY_SOURCE && tag != QUAY_ANY_TAG)
        return match_unexp_exact(m, c, src, tag);
    if (src == QUAY_ANY_SOURCE && tag != QUAY_ANY_TAG) {
        if (!c->unexp_by_tag)
            index_by_tag(m, c);
        qlink *bin = &m->unexp_tbins[match_key_hash(m->seed, c->ctx, QUAY_ANY_SOURCE, tag) & m->unexp_mask];
        for (qlink *n = bin->next; n != bin; n = n->next) {
            umsg *u = QUAY_CONTAINER_OF(n, umsg, tlink);
            if (u->ctx == c->ctx && u->tag == tag)
                return u;
        }
        return NULL;
    }
    if (src != QUAY_ANY_SOURCE && !c->unexp_by_src)
        index_by_src(c);
    qlink *h = src != QUAY_ANY_SOURCE ? &c->unexp_src[src] : &c->unexp_all;
    qlink *n = ql_first(h);
    if (n == NULL)
        return NULL;
    return src != QUAY_ANY_SOURCE ? QUAY_CONTAINER_OF(n, umsg, slink)
                                  : QUAY_CONTAINER_OF(n, umsg, alink);
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
    if (r->state != QUAY_RS_RECV_RTR && r->state != QUAY_RS_RECV_ANY && r->comm != NULL)
        r->comm->nplain++;
    if (e->m.use_fast)
        fast_add_posted(&e->m, r);
    if (e->m.oracle != NULL)
        oracle_add_posted(e->m.oracle, r);
}

void match_remove_posted(quay_engine *e, quay_req *r)
{
    if (r->state != QUAY_RS_RECV_RTR && r->state != QUAY_RS_RECV_ANY && r->comm != NULL)
        r->comm->nplain--;
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
    if (c->internal && coll_watches_arrivals(&e->coll))
        e->coll.hooks->on_arrival(e, c, u); /* application bypass may take it early */
    if (e->m.use_fast)
        match_unexp_link(&e->m, c, u);
    if (e->m.oracle != NULL)
        oracle_add_unexp(e->m.oracle, u);
}

void match_remove_unexp(quay_engine *e, umsg *u)
{
    if (e->m.use_fast)
        match_unexp_take(u->comm, u);
    else
        u->comm->nunexp--;
    if (e->m.oracle != NULL)
        oracle_remove_unexp(e->m.oracle, u);
}
