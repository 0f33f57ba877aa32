/*
 * algs.c — the registry's table (algs.h), the automatic decision of each
 * operation (docs/collectives.md), and everything that asks which
 * algorithms exist: the config check, quay_agent_post's, and
 * quay_coll_alg_name.
 */
#include "collectives/algs.h"

#define COLL_ALG_ENTRY(kind, id, name, build, usable, fallback)                               \
    {kind, id, name, build, usable, fallback},
const coll_alg coll_algs[] = {COLL_ALGS(COLL_ALG_ENTRY)};
#undef COLL_ALG_ENTRY
const size_t coll_nalgs = sizeof coll_algs / sizeof coll_algs[0];

int coll_usable_any(const coll_args *a)
{
    (void)a;
    return 1;
}

const coll_alg *coll_alg_find(uint32_t kind, uint32_t id)
{
    for (size_t i = 0; i < coll_nalgs; i++)
        if (coll_algs[i].kind == kind && coll_algs[i].id == id)
            return &coll_algs[i];
    return NULL;
}

/* ---- the automatic decision, per operation --------------------------------------- */

static int32_t pof2_below(int32_t n)
{
    int32_t p = 1;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

static uint32_t choose_bcast(const coll_args *a)
{
    if (a->count < 12288 || a->size < 8)
        return QUAY_BCAST_BINOMIAL; /* latency bound: log n messages */
    if (a->count < 524288)
        return QUAY_BCAST_SCATTER_ALLGATHER; /* ~2 len per rank, log n + n steps */
    return QUAY_BCAST_CHAIN; /* bandwidth bound: pipelined, len per rank */
}

/* (A non-commutative op ends at recursive doubling by the fallbacks: the
 * split algorithms reorder operands.) */
static uint32_t choose_allreduce(const coll_args *a)
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

static uint32_t choose(uint32_t kind, const coll_args *a)
{
    switch (kind) {
    case QUAY_OFF_BARRIER: return QUAY_BARRIER_DISSEMINATION; /* ceil(log2 n) for any n */
    case QUAY_OFF_BCAST: return choose_bcast(a);
    case QUAY_OFF_REDUCE: return QUAY_REDUCE_BINOMIAL;
    default: return choose_allreduce(a);
    }
}

const coll_alg *coll_alg_decide(uint32_t kind, uint32_t alg, const coll_args *a)
{
    const coll_alg *g = coll_alg_find(kind, alg == QUAY_COLL_AUTO ? choose(kind, a) : alg);
    /* (bounded: test_coll_algs checks that every chain ends) */
    for (size_t hops = 0; g != NULL && !g->usable(a) && hops < coll_nalgs; hops++)
        g = coll_alg_find(kind, g->fallback);
    return g;
}

/* ---- building ------------------------------------------------------------------- */

void coll_alg_build(const coll_alg *g, coll_sched *s, const coll_args *a)
{
    int nothing = s->size == 1 || (g->kind != QUAY_OFF_BARRIER && a->count == 0);
    if (!nothing) {
        g->build(s, a);
        return;
    }
    /* Every member's call completes at once; a reduction's operand still
     * lands in its result buffer (only the root's, for reduce). */
    int copies = g->kind == QUAY_OFF_ALLREDUCE ||
                 (g->kind == QUAY_OFF_REDUCE && s->rank == a->root);
    if (copies && !a->in_place && a->count != 0)
        cs_copy(s, CB_RECV, 0, CB_SEND, 0, a->count * s->esize);
}

/* ---- which algorithms exist ----------------------------------------------------- */

static int known(uint32_t kind, uint32_t alg)
{
    return alg == QUAY_COLL_AUTO || coll_alg_find(kind, alg) != NULL;
}

int coll_alg_known(uint32_t kind, uint32_t alg)
{
    return kind >= QUAY_OFF_BARRIER && kind <= QUAY_OFF_ALLREDUCE && known(kind, alg);
}

int coll_config_check(const quay_config *c)
{
    if (!known(QUAY_OFF_BARRIER, c->coll_barrier) || !known(QUAY_OFF_BCAST, c->coll_bcast) ||
        !known(QUAY_OFF_REDUCE, c->coll_reduce) ||
        !known(QUAY_OFF_ALLREDUCE, c->coll_allreduce))
        return QUAY_EINVAL;
    return 0;
}

const char *quay_coll_alg_name(uint32_t kind, uint32_t alg)
{
    if (!coll_alg_known(kind, alg))
        return NULL;
    return alg == QUAY_COLL_AUTO ? "auto" : coll_alg_find(kind, alg)->name;
}
