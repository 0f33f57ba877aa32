/*
 * algs.c — the registry's tables (algs.h: operations and algorithms), the
 * decision (an operation's automatic choice, then fallbacks), and
 * everything that asks which algorithms exist: the config check,
 * quay_agent_post's, and quay_coll_alg_name.
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

/* ---- operations ------------------------------------------------------------------- */

#define COLL_OP_ENTRY(op) &op,
static const coll_op *const coll_ops[] = {COLL_OPS(COLL_OP_ENTRY)};
#undef COLL_OP_ENTRY

const coll_op *coll_op_find(uint32_t kind)
{
    for (size_t i = 0; i < sizeof coll_ops / sizeof coll_ops[0]; i++)
        if (coll_ops[i]->kind == kind)
            return coll_ops[i];
    return NULL;
}

/* ---- the decision --------------------------------------------------------------- */

const coll_alg *coll_alg_decide(const coll_op *op, uint32_t alg, const coll_args *a)
{
    uint32_t kind = op->kind;
    const coll_alg *g = coll_alg_find(kind, alg == QUAY_COLL_AUTO ? op->choose(a) : alg);
    /* (bounded: test_coll_algs checks that every chain ends) */
    for (size_t hops = 0; g != NULL && !g->usable(a) && hops < coll_nalgs; hops++)
        g = coll_alg_find(kind, g->fallback);
    return g;
}

/* ---- building ------------------------------------------------------------------- */

void coll_alg_build(const coll_op *op, const coll_alg *g, coll_sched *s, const coll_args *a)
{
    if (s->size != 1 && !(op->counted && a->count == 0))
        g->build(s, a);
    else if (op->trivial != NULL)
        op->trivial(s, a); /* every member's call completes at once */
}

/* ---- which algorithms exist ----------------------------------------------------- */

static int known(uint32_t kind, uint32_t alg)
{
    return alg == QUAY_COLL_AUTO || coll_alg_find(kind, alg) != NULL;
}

int coll_alg_known(uint32_t kind, uint32_t alg)
{
    return coll_op_find(kind) != NULL && known(kind, alg);
}

int coll_config_check(const quay_config *c)
{
    for (size_t i = 0; i < sizeof coll_ops / sizeof coll_ops[0]; i++)
        if (!known(coll_ops[i]->kind, coll_ops[i]->configured(c)))
            return QUAY_EINVAL;
    return 0;
}

const char *quay_coll_alg_name(uint32_t kind, uint32_t alg)
{
    if (!coll_alg_known(kind, alg))
        return NULL;
    return alg == QUAY_COLL_AUTO ? "auto" : coll_alg_find(kind, alg)->name;
}
