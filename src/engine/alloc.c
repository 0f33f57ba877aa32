/*
 * alloc.c — allocation through the embedder's hooks (alloc.h).
 */
#include "engine/alloc.h"

#include <stdlib.h>

static void *libc_alloc(size_t n, void *ctx)
{
    QUAY_UNUSED(ctx);
    return malloc(n);
}

static void libc_release(void *p, void *ctx)
{
    QUAY_UNUSED(ctx);
    free(p);
}

quay_allocator alloc_libc(void)
{
    quay_allocator a = {.alloc = libc_alloc, .release = libc_release, .ctx = NULL};
    return a;
}

void *qalloc(quay_engine *e, size_t n)
{
    return e->a.alloc(n ? n : 1, e->a.ctx);
}

void *qcalloc(quay_engine *e, size_t n, size_t sz)
{
    if (sz != 0 && n > SIZE_MAX / sz)
        return NULL;
    void *p = qalloc(e, n * sz);
    if (p != NULL)
        memset(p, 0, n * sz);
    return p;
}

void qfree(quay_engine *e, void *p)
{
    if (p != NULL)
        e->a.release(p, e->a.ctx);
}
