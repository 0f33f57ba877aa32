/*
 * optab.c — the initiator's table of RDMA actions in flight (qrt_optab.h).
 */
#include "qrt_optab.h"

#include <stdlib.h>
#include <string.h>

#include <quay/quay.h>

void qrt_optab_init(qrt_optab *t)
{
    t->ops = NULL;
    t->nops = 0;
    t->free = UINT32_MAX;
}

void qrt_optab_fini(qrt_optab *t)
{
    free(t->ops);
    qrt_optab_init(t);
}

int qrt_op_alloc(qrt_optab *t, uint32_t *idx)
{
    if (t->free == UINT32_MAX) {
        uint32_t n = t->nops ? t->nops * 2 : 64;
        if (n <= t->nops)
            return QUAY_ENOMEM; /* the count would wrap */
        qrt_op *ops = realloc(t->ops, (size_t)n * sizeof *ops);
        if (ops == NULL)
            return QUAY_ENOMEM;
        memset(ops + t->nops, 0, (size_t)(n - t->nops) * sizeof *ops);
        for (uint32_t i = n; i-- > t->nops;) {
            ops[i].next = t->free;
            t->free = i;
        }
        t->ops = ops;
        t->nops = n;
    }
    uint32_t i = t->free;
    qrt_op *o = &t->ops[i];
    t->free = o->next;
    uint32_t gen = o->gen + 1;
    memset(o, 0, sizeof *o);
    o->gen = gen;
    o->used = 1;
    *idx = i;
    return 0;
}

void qrt_op_free(qrt_optab *t, uint32_t idx)
{
    t->ops[idx].used = 0;
    t->ops[idx].next = t->free;
    t->free = idx;
}

uint64_t qrt_op_cookie(const qrt_optab *t, uint32_t idx)
{
    return (uint64_t)t->ops[idx].gen << 32 | idx;
}

qrt_op *qrt_op_find(qrt_optab *t, uint64_t cookie, int32_t peer)
{
    uint32_t idx = (uint32_t)cookie;
    if (idx >= t->nops)
        return NULL;
    qrt_op *o = &t->ops[idx];
    if (!o->used || o->gen != (uint32_t)(cookie >> 32) || o->peer != peer)
        return NULL;
    return o;
}
