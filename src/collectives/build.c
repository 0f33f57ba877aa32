/*
 * build.c — building collective schedules (coll.h): steps and edges
 * appended to growable arrays. A collective call is not the
 * small-message hot path; the arrays are bounded by the algorithm
 * (O(log n) steps for trees, O(n) for rings and chains). sched.c turns
 * the edges into successor lists when the schedule starts, and runs it.
 */
#include "collectives/coll.h"

/* Grow an array of elements of size sz to hold one more (doubling). */
static int grow(quay_engine *e, void **arr, uint32_t *cap, uint32_t used, size_t sz)
{
    if (used < *cap)
        return 0;
    uint32_t ncap = *cap ? *cap * 2 : 16;
    if (ncap <= *cap || (size_t)ncap > SIZE_MAX / sz)
        return -1;
    void *n = qalloc(e, (size_t)ncap * sz);
    if (n == NULL)
        return -1;
    if (used != 0)
        memcpy(n, *arr, (size_t)used * sz);
    qfree(e, *arr);
    *arr = n;
    *cap = ncap;
    return 0;
}

static uint32_t step_add(coll_sched *s, int kind)
{
    if (s->err != 0 ||
        grow(s->e, (void **)&s->steps, &s->cap, s->nsteps, sizeof *s->steps) != 0) {
        s->err = QUAY_EAGAIN;
        return CS_NONE;
    }
    coll_step *st = &s->steps[s->nsteps];
    memset(st, 0, sizeof *st);
    st->kind = (uint8_t)kind;
    return s->nsteps++;
}

static uint32_t xfer(coll_sched *s, int kind, int32_t peer, int buf, size_t off, size_t len,
                     uint32_t subtag)
{
    if (subtag > CS_SUBTAG_LIMIT || peer < 0 || peer >= s->size || peer == s->rank) {
        s->err = QUAY_EINTERNAL; /* an algorithm's bug, never the user's */
        return CS_NONE;
    }
    uint32_t i = step_add(s, kind);
    if (i == CS_NONE)
        return i;
    coll_step *st = &s->steps[i];
    st->peer = peer;
    st->buf = (uint8_t)buf;
    st->off = off;
    st->len = len;
    st->subtag = subtag;
    return i;
}

uint32_t cs_send(coll_sched *s, int32_t peer, int buf, size_t off, size_t len, uint32_t subtag)
{
    return xfer(s, CS_SEND, peer, buf, off, len, subtag);
}

uint32_t cs_recv(coll_sched *s, int32_t peer, int buf, size_t off, size_t len, uint32_t subtag)
{
    if (buf == CB_SEND) {
        s->err = QUAY_EINTERNAL; /* the send buffer is the caller's, read only */
        return CS_NONE;
    }
    return xfer(s, CS_RECV, peer, buf, off, len, subtag);
}

static uint32_t local(coll_sched *s, int kind, int buf, size_t off, int src, size_t soff,
                      size_t len)
{
    if (buf == CB_SEND) {
        s->err = QUAY_EINTERNAL;
        return CS_NONE;
    }
    uint32_t i = step_add(s, kind);
    if (i == CS_NONE)
        return i;
    coll_step *st = &s->steps[i];
    st->buf = (uint8_t)buf;
    st->off = off;
    st->buf2 = (uint8_t)src;
    st->off2 = soff;
    st->len = len;
    return i;
}

uint32_t cs_reduce(coll_sched *s, int src, size_t soff, int buf, size_t off, size_t count)
{
    return local(s, CS_REDUCE, buf, off, src, soff, count * s->esize);
}

uint32_t cs_copy(coll_sched *s, int buf, size_t off, int src, size_t soff, size_t len)
{
    return local(s, CS_COPY, buf, off, src, soff, len);
}

uint32_t cs_join(coll_sched *s) { return step_add(s, CS_JOIN); }

uint32_t cs_after(coll_sched *s, uint32_t a, uint32_t b)
{
    if (a == CS_NONE || b == CS_NONE)
        return a == CS_NONE ? b : a;
    uint32_t j = cs_join(s);
    cs_dep(s, a, j);
    cs_dep(s, b, j);
    return j;
}

void cs_dep(coll_sched *s, uint32_t before, uint32_t after)
{
    if (before == CS_NONE || after == CS_NONE || s->err != 0)
        return;
    if (grow(s->e, (void **)&s->edges, &s->ecap, s->nedges, 2 * sizeof *s->edges) != 0) {
        s->err = QUAY_EAGAIN;
        return;
    }
    s->edges[2 * s->nedges] = before;
    s->edges[2 * s->nedges + 1] = after;
    s->nedges++;
}

void sched_tmp(coll_sched *s, size_t len)
{
    if (len > s->tmp_len)
        s->tmp_len = len;
}
