/*
 * match_oracle.c — linear first-match matcher (the oracle).
 */
#include "engine/match_oracle.h"

typedef struct oentry {
    void *obj;
    uint32_t ctx;
    int32_t src; /* pattern for receives (may be ANY_SOURCE) */
    int32_t tag; /* pattern for receives (may be ANY_TAG) */
} oentry;

struct oracle {
    oentry *posted;
    uint32_t nposted, cap_posted;
    oentry *unexp;
    uint32_t nunexp, cap_unexp;
};

oracle *oracle_new(quay_engine *e, uint32_t max_posted, uint32_t max_unexp)
{
    oracle *o = qalloc(e, sizeof *o);
    if (o == NULL)
        return NULL;
    memset(o, 0, sizeof *o);
    o->posted = qalloc(e, (size_t)max_posted * sizeof *o->posted);
    o->unexp = qalloc(e, (size_t)max_unexp * sizeof *o->unexp);
    if (o->posted == NULL || o->unexp == NULL) {
        oracle_free(e, o);
        return NULL;
    }
    o->cap_posted = max_posted;
    o->cap_unexp = max_unexp;
    return o;
}

void oracle_free(quay_engine *e, oracle *o)
{
    if (o == NULL)
        return;
    qfree(e, o->posted);
    qfree(e, o->unexp);
    qfree(e, o);
}

void oracle_clear(oracle *o)
{
    o->nposted = 0;
    o->nunexp = 0;
}

static int pattern_matches(int32_t psrc, int32_t ptag, int32_t src, int32_t tag)
{
    return (psrc == QUAY_ANY_SOURCE || psrc == src) &&
           (ptag == QUAY_ANY_TAG || ptag == tag);
}

quay_req *oracle_find_posted(oracle *o, uint32_t ctx, int32_t src, int32_t tag)
{
    for (uint32_t i = 0; i < o->nposted; i++) {
        const oentry *p = &o->posted[i];
        if (p->ctx == ctx && pattern_matches(p->src, p->tag, src, tag))
            return p->obj;
    }
    return NULL;
}

void oracle_add_posted(oracle *o, quay_req *r)
{
    if (o->nposted < o->cap_posted)
        o->posted[o->nposted++] = (oentry){r, r->ctx, r->rank, r->tag};
}

static void remove_at(oentry *a, uint32_t *n, const void *obj)
{
    for (uint32_t i = 0; i < *n; i++) {
        if (a[i].obj == obj) {
            memmove(&a[i], &a[i + 1], (size_t)(*n - i - 1) * sizeof *a);
            (*n)--;
            return;
        }
    }
}

void oracle_remove_posted(oracle *o, const quay_req *r)
{
    remove_at(o->posted, &o->nposted, r);
}

umsg *oracle_find_unexp(oracle *o, uint32_t ctx, int32_t src, int32_t tag)
{
    for (uint32_t i = 0; i < o->nunexp; i++) {
        const oentry *u = &o->unexp[i];
        if (u->ctx == ctx && pattern_matches(src, tag, u->src, u->tag))
            return u->obj;
    }
    return NULL;
}

void oracle_add_unexp(oracle *o, umsg *m)
{
    if (o->nunexp < o->cap_unexp)
        o->unexp[o->nunexp++] = (oentry){m, m->ctx, m->src, m->tag};
}

void oracle_remove_unexp(oracle *o, const umsg *m)
{
    remove_at(o->unexp, &o->nunexp, m);
}

umsg *oracle_unexp_at(const oracle *o, uint32_t i)
{
    return i < o->nunexp ? (umsg *)o->unexp[i].obj : NULL;
}
