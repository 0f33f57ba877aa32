/*
 * match_fast.h — the fast matcher's hash and posted-bin walk, inline.
 *
 * match.c is the matcher; these few lines are shared with the eager hot
 * path (p2p.c posts a receive, eager.c matches an arrival) so that the
 * commonest case — exact patterns on a communicator with no wildcard
 * receive, no oracle alongside — costs no call. Anything else goes
 * through match.c's facade, which also keeps the oracle in lockstep.
 */
#ifndef QUAY_ENGINE_MATCH_FAST_H
#define QUAY_ENGINE_MATCH_FAST_H

#include "engine/internal.h"

/* The unexpected bins' hash: their keys come from peers (untrusted), so
 * every input bit is mixed into every output bit (murmur3's finalizer)
 * under the engine's seed. */
static inline uint32_t match_key_hash(uint64_t seed, uint32_t ctx, int32_t src, int32_t tag)
{
    uint64_t k = ((uint64_t)(uint32_t)src << 32 | (uint32_t)tag) ^ seed ^
                 ((uint64_t)ctx * 0x9e3779b97f4a7c15ull);
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k;
}

/* The posted bins' hash: their keys are the local receives' patterns (a
 * peer's envelope only picks which bin is walked), so one multiply will
 * do (both the post and every arrival pay it). The communicator's term
 * (comm_hkey: context and seed) is made once, at its creation. The fold
 * brings the source into the low word, so that sources a multiple of the
 * bins' count apart do not share a bin; bits 32 and up of the product
 * then depend on every bit of the folded word and the mask takes the
 * bins' count of them (tests/test_match.c checks the spread of strided,
 * sequential and wildcard patterns). */
static inline uint32_t match_posted_hash(const quay_comm *c, int32_t psrc, int32_t ptag)
{
    uint64_t k = ((uint64_t)(uint32_t)psrc << 32 | (uint32_t)ptag) ^ c->hkey;
    k ^= k >> 32;
    return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 32);
}

/* The posted bin of pattern (c, psrc, ptag); wildcards are -1. */
static inline qlink *match_posted_bin(const match_state *m, const quay_comm *c, int32_t psrc,
                                      int32_t ptag)
{
    return &m->posted_bins[match_posted_hash(c, psrc, ptag) & m->posted_mask];
}

/* First receive in `bin` whose pattern is exactly (ctx, psrc, ptag). */
static inline quay_req *match_bin_first(const qlink *bin, uint32_t ctx, int32_t psrc,
                                        int32_t ptag)
{
    for (qlink *n = bin->next; n != bin; n = n->next) {
        quay_req *r = QUAY_CONTAINER_OF(n, quay_req, link);
        if (r->ctx == ctx && r->rank == psrc && r->tag == ptag)
            return r;
    }
    return NULL;
}

/* The same in the pattern's own bin. */
static inline quay_req *match_bin_head(const match_state *m, const quay_comm *c, int32_t psrc,
                                       int32_t ptag)
{
    return match_bin_first(match_posted_bin(m, c, psrc, ptag), c->ctx, psrc, ptag);
}

/* No oracle runs (the fast matcher is the matcher) and c has no wildcard
 * receive posted: an arrival's only candidate is the head of its exact
 * bin, and taking it is unlinking it. */
static inline int match_exact_only(const quay_engine *e, const quay_comm *c)
{
    return e->m.oracle == NULL && (c->n_anysrc | c->n_anytag | c->nwild) == 0;
}

/* match_add_posted for r, a RECV_POSTED receive from one source of c
 * (ANY_TAG allowed), when no oracle runs, into `bin`: its pattern's
 * (quay_startall finds it once for a run of receives of one pattern). */
static inline void match_post_in_bin(quay_engine *e, quay_comm *c, quay_req *r, qlink *bin)
{
    r->stamp = ++e->stamp;
    c->nplain++;
    if (r->tag == QUAY_ANY_TAG)
        c->n_anytag++;
    ql_push_tail(bin, &r->link);
}

/* The same, the bin found here. (Not by match_post_in_bin: the bin's
 * hash made after the counters costs the post one instruction more.) */
static inline void match_post_one_source(quay_engine *e, quay_comm *c, quay_req *r)
{
    r->stamp = ++e->stamp;
    c->nplain++;
    if (r->tag == QUAY_ANY_TAG)
        c->n_anytag++;
    ql_push_tail(match_posted_bin(&e->m, c, r->rank, r->tag), &r->link);
}

/* An unexpected message onto its lists (match.c's header comment): the
 * (ctx, src, tag) bin and its communicator's arrival-order list; the
 * (ctx, tag) bin and the per-source list once the communicator has them. */
static inline void match_unexp_link(match_state *m, quay_comm *c, umsg *u)
{
    ql_push_tail(&m->unexp_bins[match_key_hash(m->seed, c->ctx, u->src, u->tag) & m->unexp_mask],
                 &u->blink);
    ql_push_tail(&c->unexp_all, &u->alink);
    if (c->unexp_by_tag)
        ql_push_tail(&m->unexp_tbins[match_key_hash(m->seed, c->ctx, QUAY_ANY_SOURCE, u->tag) &
                                     m->unexp_mask],
                     &u->tlink);
    if (c->unexp_by_src)
        ql_push_tail(&c->unexp_src[u->src], &u->slink);
}

/* Off every list (its links left stale: it is taken or freed next). */
static inline void match_unexp_unlink(const quay_comm *c, umsg *u)
{
    ql_unlink(&u->blink);
    ql_unlink(&u->alink);
    if (c->unexp_by_tag)
        ql_unlink(&u->tlink);
    if (c->unexp_by_src)
        ql_unlink(&u->slink);
}

/* A kept message of c taken by a receive, no oracle alongside: off its
 * lists and out of c's count (match_remove_unexp without the oracle). */
static inline void match_unexp_take(quay_comm *c, umsg *u)
{
    match_unexp_unlink(c, u);
    c->nunexp--;
}

/* The oldest unexpected message of (c, src, tag), both exact. */
static inline umsg *match_unexp_exact(const match_state *m, const quay_comm *c, int32_t src,
                                      int32_t tag)
{
    uint32_t ctx = c->ctx;
    const qlink *bin = &m->unexp_bins[match_key_hash(m->seed, ctx, src, tag) & m->unexp_mask];
    for (qlink *n = bin->next; n != bin; n = n->next) {
        umsg *u = QUAY_CONTAINER_OF(n, umsg, blink);
        if (u->ctx == ctx && u->src == src && u->tag == tag)
            return u;
    }
    return NULL;
}

#endif
