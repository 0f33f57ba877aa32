/*
 * sim_gen.c — turn a fuzz_sim input into a scenario (the language of
 * tests/ordering/README.md) that is deadlock-free under every legal
 * matching and interleaving, whatever the bytes.
 *
 * Every motif works on tags of its own (8 per motif), so no receive of
 * one motif can take a message of another; ANY_TAG receives only on a
 * communicator made for that motif. A rank's statements are laid out in
 * phases, so that nothing blocks on something that comes later:
 *   0  non-blocking calls (sends, receives, cancels of unmatched
 *      receives, collectives, comm_create)
 *   1  waits that a first runner sync needs (sends matched in phase 0)
 *      -- sync 1 (only when a motif needs it) --
 *   2  non-blocking calls after it
 *   3  waits that a second sync needs (sends matched in phase 2)
 *      -- sync 2 --
 *   4  cancels of spare receives
 *   5  blocking probes and matched probes, each followed by the receive
 *      of what it found (every message is sent in phase 0 or 2)
 *   6  waitall, then detach
 * With tight bounds (a small unexpected budget) a message may wait for
 * buffer space until its receive is posted, so tight programs have no
 * phase 1, 3 or 5: everything is posted before anything blocks.
 */
#include "fuzz_sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define NPHASE 7
#define GEN_MAX_COMMS 16 /* the scenario language's limit, world included */
#define GEN_MAX_SIZE 2048

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

typedef struct gcomm {
    uint32_t id;
    int n;
    int world[8];
    int crank[8]; /* world rank -> comm rank, -1 */
} gcomm;

typedef struct gen {
    int n;
    int tight;
    size_t eager, frag;
    uint32_t depth;
    sbuf ops[8][NPHASE];
    sbuf head, tail;
    gcomm comms[GEN_MAX_COMMS];
    int ncomms;
    int sync1, sync2;
    size_t attach[8];
    int m;   /* motif index */
    int tag; /* its first tag */
} gen;

static void sb_add(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_add(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int k;
    if (b->oom)
        return;
    for (;;) {
        va_start(ap, fmt);
        k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if (b->p != NULL && (size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        size_t ncap = (b->cap ? b->cap * 2 : 256) + (size_t)k;
        char *np = realloc(b->p, ncap);
        if (np == NULL) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
}

static void op(gen *g, int rank, int phase, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void op(gen *g, int rank, int phase, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    sb_add(&g->ops[rank][phase], "%d: %s\n", rank, line);
}

/* ---- communicators --------------------------------------------------------- */

/* " comm=ID" for comm c, "" for the world. */
static const char *cm(const gen *g, int c, char *buf, size_t n)
{
    if (c == 0)
        buf[0] = '\0';
    else
        snprintf(buf, n, " comm=%u", g->comms[c].id);
    return buf;
}

static int cr(const gen *g, int c, int w)
{
    return g->comms[c].crank[w];
}

/* A fresh communicator of the ranks in `mask` (at least the world rank
 * `must`), in an order rotated by `rot`; 0 (the world) when none is left. */
static int new_comm(gen *g, unsigned mask, int rot)
{
    gcomm *c;
    int mem[8], k = 0;
    if (g->ncomms == GEN_MAX_COMMS)
        return 0;
    for (int w = 0; w < g->n; w++)
        if (mask >> w & 1u)
            mem[k++] = w;
    if (k == 0)
        return 0;
    c = &g->comms[g->ncomms];
    c->id = 100u + (uint32_t)g->ncomms;
    c->n = k;
    for (int w = 0; w < 8; w++)
        c->crank[w] = -1;
    sb_add(&g->head, "comm %u =", c->id);
    for (int i = 0; i < k; i++) {
        int w = mem[(i + rot) % k];
        c->world[i] = w;
        c->crank[w] = i;
        sb_add(&g->head, " %d", w);
    }
    sb_add(&g->head, "\n");
    return g->ncomms++;
}

/* ---- sizes and modes --------------------------------------------------------- */

static size_t size_of(const gen *g, uint8_t s)
{
    size_t v;
    switch (s % 9) {
    case 0: v = 0; break;
    case 1: v = 1; break;
    case 2: v = 8 + s / 9 % 32; break;
    case 3: v = g->eager - 1; break;
    case 4: v = g->eager; break;
    case 5: v = g->eager + 1; break;
    case 6: v = 2 * g->frag + 3; break;
    case 7: v = (size_t)g->depth * g->frag * 3 + 1; break;
    default: v = 777; break;
    }
    return v > GEN_MAX_SIZE ? GEN_MAX_SIZE : v;
}

static const char *mode_of(gen *g, int rank, unsigned m, size_t size)
{
    static const char *const names[4] = {"std", "sync", "ready", "buf"};
    if ((m & 3u) == 3u)
        g->attach[rank] += size + 64 + 64; /* + QUAY_BSEND_OVERHEAD, slack */
    return names[m & 3u];
}

static int pick_rank(const gen *g, uint8_t b)
{
    return b % g->n;
}

/* ---- motifs ---------------------------------------------------------------------- */

static void m_p2p(gen *g, const uint8_t *r)
{
    int s = pick_rank(g, r[1]), d = pick_rank(g, r[2]);
    int k = 1 + r[3] % 3, pat = (r[3] >> 4) & 3, trunc = (r[3] >> 6) & 1;
    int c = 0;
    char cb[32];
    if ((r[3] >> 2) & 3 || pat == 3)
        c = new_comm(g, (1u << s) | (1u << d) | (r[4] & ((1u << g->n) - 1)), (r[3] >> 2) & 3);
    if (pat == 3 && c == 0)
        pat = 0;
    for (int j = 0; j < k; j++) {
        size_t size = size_of(g, (uint8_t)(r[4] + j * 37));
        size_t cap = trunc && size > 0 ? size - 1 : size;
        const char *mode = mode_of(g, s, (unsigned)r[5] >> (2 * j), size);
        int any = pat == 1 || (pat == 2 && (r[5] >> j & 1)) || (pat == 3 && (r[4] >> j & 1));
        op(g, s, 0, "isend to=%d tag=%d size=%zu mode=%s%s as=m%ds%d", cr(g, c, d), g->tag, size,
           mode, cm(g, c, cb, sizeof cb), g->m, j);
        if (j == 0 && (r[3] >> 7))
            op(g, s, 0, "free m%ds0", g->m);
        char src[16], tag[16];
        if (any)
            snprintf(src, sizeof src, "any");
        else
            snprintf(src, sizeof src, "%d", cr(g, c, s));
        if (pat == 3)
            snprintf(tag, sizeof tag, "any");
        else
            snprintf(tag, sizeof tag, "%d", g->tag);
        op(g, d, 0, "irecv from=%s tag=%s cap=%zu%s as=m%dr%d", src, tag, cap,
           cm(g, c, cb, sizeof cb), g->m, j);
    }
}

static void m_wildcard(gen *g, const uint8_t *r)
{
    int d = pick_rank(g, r[1]), c = 0, anytag = (r[4] >> 2) & 1, trunc = (r[4] >> 3) & 1;
    unsigned senders = (r[2] & ((1u << g->n) - 1)) | (1u << ((d + 1) % g->n));
    int total = 0;
    char cb[32];
    if ((r[4] & 3) || anytag)
        c = new_comm(g, senders | (1u << d), r[4] & 3);
    if (c == 0)
        anytag = 0;
    for (int w = 0; w < g->n; w++) {
        if (!(senders >> w & 1u))
            continue;
        for (int j = 0; j < 1 + (r[3] >> w & 1); j++) {
            size_t size = size_of(g, (uint8_t)(r[5] + w * 13 + j * 5));
            op(g, w, 0, "isend to=%d tag=%d size=%zu%s as=m%dw%ds%d", cr(g, c, d),
               g->tag + (anytag ? j : 0), size, cm(g, c, cb, sizeof cb), g->m, w, j);
            total++;
        }
    }
    for (int j = 0; j < total; j++) {
        size_t cap = trunc ? size_of(g, (uint8_t)(r[5] + j)) : GEN_MAX_SIZE;
        if (anytag)
            op(g, d, 0, "irecv from=any tag=any cap=%zu%s as=m%dr%d", cap,
               cm(g, c, cb, sizeof cb), g->m, j);
        else
            op(g, d, 0, "irecv from=any tag=%d cap=%zu%s as=m%dr%d", g->tag, cap,
               cm(g, c, cb, sizeof cb), g->m, j);
    }
}

static void m_probe(gen *g, const uint8_t *r)
{
    int s = pick_rank(g, r[1]), d = pick_rank(g, r[2]);
    int k = 1 + (r[3] & 1), style = (r[3] >> 1) & 3, c = 0;
    char src[16], cb[32];
    if ((r[3] >> 4) & 1)
        c = new_comm(g, (1u << s) | (1u << d), r[3] >> 5);
    if ((r[3] >> 3) & 1)
        snprintf(src, sizeof src, "any");
    else
        snprintf(src, sizeof src, "%d", cr(g, c, s));
    if (g->tight)
        style = 2;
    for (int j = 0; j < k; j++) {
        size_t size = size_of(g, (uint8_t)(r[4] + j * 11));
        int st = style == 3 ? (j & 1) : style;
        op(g, s, 0, "isend to=%d tag=%d size=%zu mode=%s%s as=m%ds%d", cr(g, c, d), g->tag, size,
           mode_of(g, s, (unsigned)r[5] >> (2 * j), size), cm(g, c, cb, sizeof cb), g->m, j);
        switch (st) {
        case 0:
            op(g, d, 5, "probe from=%s tag=%d%s as=m%dp%d", src, g->tag, cm(g, c, cb, sizeof cb),
               g->m, j);
            op(g, d, 5, "irecv from=%s tag=%d cap=%zu%s as=m%dr%d", src, g->tag, size,
               cm(g, c, cb, sizeof cb), g->m, j);
            break;
        case 1:
            op(g, d, 5, "mprobe from=%s tag=%d%s as=m%dp%d", src, g->tag,
               cm(g, c, cb, sizeof cb), g->m, j);
            op(g, d, 5, "mrecv m%dp%d cap=%zu as=m%dr%d", g->m, j, size, g->m, j);
            break;
        default:
            op(g, d, 0, "iprobe from=%s tag=%d%s as=m%dp%d", src, g->tag,
               cm(g, c, cb, sizeof cb), g->m, j);
            op(g, d, 0, "irecv from=%s tag=%d cap=%zu%s as=m%dr%d", src, g->tag, size,
               cm(g, c, cb, sizeof cb), g->m, j);
            break;
        }
    }
}

static void m_cancel_recv(gen *g, const uint8_t *r)
{
    int s = pick_rank(g, r[1]), d = pick_rank(g, r[2]), v = r[3] % 3;
    size_t size = v == 2 ? size_of(g, 7) : size_of(g, r[4]);
    if (g->tight)
        v = 0;
    if (v == 0) { /* nothing will ever match it */
        op(g, d, 0, "irecv from=%d tag=%d cap=16 as=m%dx", s, g->tag, g->m);
        op(g, d, 0, "cancel m%dx", g->m);
        sb_add(&g->tail, "%d: expect m%dx err=ECANCELLED count=0\n", d, g->m);
        return;
    }
    /* One message, two receives: the first is cancelled at once, the
     * second at the end; exactly one of them gets it. */
    op(g, d, 0, "irecv from=%d tag=%d cap=%zu as=m%dy", s, g->tag, size, g->m);
    op(g, d, 0, "cancel m%dy", g->m);
    op(g, d, 0, "irecv from=%d tag=%d cap=%zu as=m%dz", s, g->tag, size, g->m);
    op(g, s, 0, "isend to=%d tag=%d size=%zu mode=sync as=m%da", d, g->tag, size, g->m);
    op(g, s, 1, "wait m%da", g->m);
    op(g, d, 2, "cancel m%dz", g->m);
    g->sync1 = 1;
}

static void m_cancel_send(gen *g, const uint8_t *r)
{
    int s = pick_rank(g, r[1]), d = pick_rank(g, r[2]), late = (r[3] >> 1) & 1;
    size_t sa = size_of(g, r[4]), sb = size_of(g, r[5]);
    size_t cap = sa > sb ? sa : sb;
    if (g->tight)
        return;
    /* The cancelled send a races its matching; b (synchronous) then goes
     * to whichever receive a left, and the spare one is cancelled. */
    op(g, s, 0, "isend to=%d tag=%d size=%zu mode=%s as=m%da", d, g->tag, sa,
       (r[3] & 1) ? "sync" : "std", g->m);
    op(g, s, 0, "cancel m%da", g->m);
    op(g, s, 1, "wait m%da", g->m);
    op(g, d, late ? 2 : 0, "irecv from=%d tag=%d cap=%zu as=m%dx", s, g->tag, cap, g->m);
    op(g, d, 2, "irecv from=%d tag=%d cap=%zu as=m%dy", s, g->tag, cap, g->m);
    op(g, s, 2, "isend to=%d tag=%d size=%zu mode=sync as=m%db", d, g->tag, sb, g->m);
    op(g, s, 3, "wait m%db", g->m);
    op(g, d, 4, "cancel m%dy", g->m);
    g->sync1 = g->sync2 = 1;
}

static void m_coll(gen *g, const uint8_t *r)
{
    static const char *const dtypes[10] = {"int8",  "uint8", "int16", "uint16", "int32",
                                           "uint32", "int64", "uint64", "float", "double"};
    static const char *const intops[10] = {"sum", "prod", "min", "max", "band",
                                           "bor", "bxor", "land", "lor", "lxor"};
    static const char *const fops[4] = {"sum", "prod", "min", "max"};
    int kind = r[1] % 4, c = 0, dt = (r[2] >> 1) % 10, opi = r[2] >> 5;
    const char *opname;
    char cb[32], extra[64];
    if (r[2] & 1)
        c = new_comm(g, r[3] | (1u << (r[4] % g->n)) | (1u << ((r[4] + 1) % g->n)), r[4] >> 5);
    const gcomm *gc = &g->comms[c];
    int root = (r[4] & 15) % gc->n;
    if (dt >= 8)
        opname = fops[opi % 4];
    else if (dt == 7 && opi == 7)
        opname = "affine";
    else
        opname = intops[(opi + (r[5] >> 4)) % 10];
    extra[0] = '\0';
    for (int i = 0; i < gc->n; i++) {
        int w = gc->world[i];
        switch (kind) {
        case 0:
            op(g, w, 0, "ibarrier%s as=m%dc", cm(g, c, cb, sizeof cb), g->m);
            break;
        case 1:
            op(g, w, 0, "ibcast root=%d size=%zu%s as=m%dc", root, size_of(g, r[5]),
               cm(g, c, cb, sizeof cb), g->m);
            break;
        case 2:
            op(g, w, 0, "ireduce root=%d count=%d type=%s op=%s%s%s as=m%dc", root, 1 + r[5] % 16,
               dtypes[dt], opname, (r[3] >> 7) && i == root ? " inplace" : "",
               cm(g, c, cb, sizeof cb), g->m);
            break;
        default:
            op(g, w, 0, "iallreduce count=%d type=%s op=%s%s%s as=m%dc", 1 + r[5] % 16,
               dtypes[dt], opname, (r[3] >> 7) && (i & 1) ? " inplace" : "",
               cm(g, c, cb, sizeof cb), g->m);
            break;
        }
        if ((r[4] >> 4) & 1 && i == (r[5] & 7) % gc->n)
            op(g, w, 0, "free m%dc", g->m);
    }
    (void)extra;
}

static void m_comm_late(gen *g, const uint8_t *r)
{
    int d = pick_rank(g, r[1]), s = pick_rank(g, r[2]), k = 1 + (r[3] & 1);
    int late = !g->tight && (r[3] >> 1) & 1, anytag = (r[3] >> 2) & 1;
    int ph = late ? 2 : 0;
    if (s == d)
        s = (d + 1) % g->n;
    if (g->ncomms == GEN_MAX_COMMS)
        return;
    int c = new_comm(g, (1u << s) | (1u << d), r[3] >> 3);
    char cb[32];
    op(g, d, ph, "comm_create %u", g->comms[c].id);
    for (int j = 0; j < k; j++) {
        size_t size = size_of(g, (uint8_t)(r[4] + j * 7));
        op(g, s, 0, "isend to=%d tag=%d size=%zu%s as=m%ds%d", cr(g, c, d), g->tag + j, size,
           cm(g, c, cb, sizeof cb), g->m, j);
        if (anytag)
            op(g, d, ph, "irecv from=any tag=any cap=%zu%s as=m%dr%d", size,
               cm(g, c, cb, sizeof cb), g->m, j);
        else
            op(g, d, ph, "irecv from=%d tag=%d cap=%zu%s as=m%dr%d", cr(g, c, s), g->tag + j, size,
               cm(g, c, cb, sizeof cb), g->m, j);
    }
    if (late)
        g->sync1 = 1;
}

static void m_proc_null(gen *g, const uint8_t *r)
{
    int w = pick_rank(g, r[1]);
    op(g, w, 0, "isend to=null tag=%d size=%zu as=m%ds", g->tag, size_of(g, r[4]), g->m);
    op(g, w, 0, "irecv from=null tag=%d cap=%zu as=m%dr", g->tag, size_of(g, r[4]), g->m);
    op(g, w, 0, "iprobe from=null tag=any as=m%dp", g->m);
}

static void m_stream(gen *g, const uint8_t *r)
{
    int s = pick_rank(g, r[1]), d = pick_rank(g, r[2]), k = 3 + r[3] % 4;
    for (int j = 0; j < k; j++) {
        size_t size = size_of(g, (uint8_t)(r[4] + j * 4));
        op(g, s, 0, "isend to=%d tag=%d size=%zu mode=%s as=m%ds%d", d, g->tag, size,
           (r[5] >> j & 1) ? "sync" : "std", g->m, j);
        if ((r[3] >> (2 + j)) & 1)
            op(g, d, 0, "irecv from=any tag=%d cap=%zu as=m%dr%d", g->tag, size, g->m, j);
        else
            op(g, d, 0, "irecv from=%d tag=%d cap=%zu as=m%dr%d", s, g->tag, size, g->m, j);
    }
}

static void m_ring(gen *g, const uint8_t *r)
{
    int stride = 1 + r[1] % (g->n > 1 ? g->n - 1 : 1);
    size_t size = size_of(g, r[4]);
    for (int w = 0; w < g->n; w++) {
        int to = (w + stride) % g->n, from = (w - stride + g->n) % g->n;
        op(g, w, 0, "irecv from=%d tag=%d cap=%zu as=m%dr", from, g->tag, size, g->m);
        op(g, w, 0, "isend to=%d tag=%d size=%zu mode=%s as=m%ds", to, g->tag, size,
           mode_of(g, w, (unsigned)r[2] >> (2 * (w % 4)), size), g->m);
    }
}

/* ---- the program ------------------------------------------------------------------ */

static void config(gen *g, const uint8_t *h, int *flow, int *switches)
{
    static const size_t eager[4] = {64, 256, 32, 1024};
    static const size_t frag[4] = {32, 128, 16, 64};
    static const uint32_t depth[4] = {1, 2, 4, 8};
    static const char *const rndv[8] = {NULL, "copy", "get", "put", "mixed", NULL, NULL, NULL};
    static const char *const coll[8] = {
        NULL,
        "coll=mixed",
        "coll_barrier=dissemination coll_bcast=binomial coll_allreduce=rd",
        "coll_barrier=pairwise coll_bcast=optimal coll_allreduce=rabenseifner",
        "coll_barrier=tree coll_bcast=chain coll_allreduce=ring coll_tree_degree=2",
        "coll_barrier=tree coll_bcast=scatter coll_allreduce=ring coll_tree_degree=3",
        "coll_bcast=chain coll_segment=64",
        "coll_barrier=mixed coll_bcast=mixed coll_reduce=mixed coll_allreduce=mixed"};
    static const char *const pct[4] = {"1%", "2%", "5%", "10%"};
    static const char *const fname[6] = {"delay", "reorder", "stall", "drop", "dup", "corrupt"};
    g->n = 2 + h[0] % 7;
    g->eager = eager[h[3] & 3];
    g->frag = frag[(h[3] >> 2) & 3];
    g->depth = depth[(h[3] >> 4) & 3];
    g->tight = (h[3] >> 7) & 1;
    *flow = (h[1] & 3) == 3 ? 0 : h[1] & 3;
    *switches = *flow != 0 && ((h[1] >> 2) & 1);
    sb_add(&g->head, "ranks %d\n", g->n);
    /* A budget that every program fits (so that probes cannot starve),
     * and that bounds the memory check; tight: a small one. */
    /* FIFO links need a receiver that can hold what arrives ahead of its
     * turn: without flow control a deferred packet (QUAY_EAGAIN) blocks
     * its link, so tight bounds keep the links reordering. */
    int fifo = (h[3] >> 6) & 1 && !(g->tight && *flow == 0);
    sb_add(&g->head, "config eager_max=%zu frag_size=%zu depth=%u reorder=%d unexpected_bytes=%s\n",
           g->eager, g->frag, g->depth, fifo ? 0 : 1, g->tight ? "512" : "1M");
    if (g->tight)
        sb_add(&g->head, "config max_unexpected=4 max_out=4 max_ctrl=4 reorder_window=4\n");
    if (*flow)
        sb_add(&g->head, "config flow=%s\n", *flow == 1 ? "acknack" : "credit");
    if (rndv[(h[1] >> 3) & 7])
        sb_add(&g->head, "config rndv=%s\n", rndv[(h[1] >> 3) & 7]);
    if ((h[1] >> 6) == 1 || (h[1] >> 6) == 2)
        sb_add(&g->head, "config rtr=%d\n", h[1] >> 6);
    if (coll[h[4] & 7])
        sb_add(&g->head, "config %s\n", coll[h[4] & 7]);
    if (((h[4] >> 3) & 3) == 1)
        sb_add(&g->head, "config coll_bypass=1\n");
    else if (((h[4] >> 3) & 3) == 2)
        sb_add(&g->head, "config coll_bypass=mixed\n");
    /* One schedule at a time makes a collective call wait (EAGAIN) for
     * the one before it: a blocking point, which tight programs must not
     * have (a message refused for lack of room would wait for a receive
     * posted after it). */
    /* (With application bypass too: an early schedule never takes the
     * last slot — fuzz/crashes/sim/bypass-early-schedule-takes-slot was
     * the deadlock when it could.) */
    if ((h[4] >> 5) & 1 && !g->tight)
        sb_add(&g->head, "config coll_max=1\n");
    {
        char spec[160];
        size_t k = 0;
        spec[0] = '\0';
        for (int i = 0; i < 6; i++) {
            if (!(h[2] >> i & 1) || (i >= 3 && !*flow))
                continue;
            k += (size_t)snprintf(spec + k, sizeof spec - k, "%s%s:%s", k ? "," : "", fname[i],
                                  pct[h[2] >> 6]);
        }
        if (k != 0)
            sb_add(&g->head, "config faults=%s\n", spec);
    }
}

int sim_generate(const uint8_t *data, size_t size, sim_prog *p)
{
    uint8_t h[SIM_HDR];
    gen *g = calloc(1, sizeof *g);
    sbuf out = {0};
    size_t pos;
    int nm, flow = 0;
    memset(p, 0, sizeof *p);
    if (g == NULL)
        return -1;
    memset(h, 0, sizeof h);
    memcpy(h, data, size < SIM_HDR ? size : SIM_HDR);
    pos = size < SIM_HDR ? size : SIM_HDR;
    sb_add(&g->head, "# fuzz_sim program\n");
    config(g, h, &flow, &p->switches);
    p->nranks = g->n;
    p->seed = (uint64_t)h[6] | (uint64_t)h[7] << 8;
    g->ncomms = 1;
    g->comms[0].n = g->n;
    for (int w = 0; w < 8; w++) {
        g->comms[0].world[w] = w;
        g->comms[0].crank[w] = w < g->n ? w : -1;
    }
    nm = h[5] % (SIM_MAX_MOTIFS + 1);
    for (g->m = 0; g->m < nm; g->m++) {
        uint8_t r[SIM_REC];
        memset(r, 0, sizeof r);
        if (pos < size)
            memcpy(r, data + pos, size - pos < SIM_REC ? size - pos : SIM_REC);
        pos = size - pos < SIM_REC ? size : pos + SIM_REC;
        g->tag = 1 + 8 * g->m;
        switch (r[0] % SIM_NKINDS) {
        case SIM_P2P: m_p2p(g, r); break;
        case SIM_WILDCARD: m_wildcard(g, r); break;
        case SIM_PROBE: m_probe(g, r); break;
        case SIM_CANCEL_RECV: m_cancel_recv(g, r); break;
        case SIM_CANCEL_SEND: m_cancel_send(g, r); break;
        case SIM_COLL: m_coll(g, r); break;
        case SIM_COMM_LATE: m_comm_late(g, r); break;
        case SIM_PROC_NULL: m_proc_null(g, r); break;
        case SIM_STREAM: m_stream(g, r); break;
        case SIM_RING: m_ring(g, r); break;
        default:
            if (!g->tight)
                g->sync1 = 1;
            break;
        }
    }
    p->sched = data + pos;
    p->nsched = size - pos > SIM_MAX_SCHED ? SIM_MAX_SCHED : size - pos;

    /* Lay the program out. */
    sb_add(&out, "%s", g->head.p ? g->head.p : "");
    for (int w = 0; w < g->n; w++)
        if (g->attach[w] != 0)
            sb_add(&out, "%d: attach size=%zu\n", w, g->attach[w]);
    for (int ph = 0; ph < NPHASE; ph++) {
        if (ph == 6)
            sb_add(&out, "*: waitall\n");
        for (int w = 0; w < g->n; w++)
            sb_add(&out, "%s", g->ops[w][ph].p ? g->ops[w][ph].p : "");
        if ((ph == 1 && g->sync1) || (ph == 3 && g->sync2))
            sb_add(&out, "*: sync\n");
    }
    for (int w = 0; w < g->n; w++)
        if (g->attach[w] != 0)
            sb_add(&out, "%d: detach\n", w);
    sb_add(&out, "%s", g->tail.p ? g->tail.p : "");
    int oom = out.oom || g->head.oom || g->tail.oom;
    for (int w = 0; w < 8; w++)
        for (int ph = 0; ph < NPHASE; ph++) {
            oom |= g->ops[w][ph].oom;
            free(g->ops[w][ph].p);
        }
    free(g->head.p);
    free(g->tail.p);
    free(g);
    (void)flow;
    if (oom || out.p == NULL) {
        free(out.p);
        return -1;
    }
    p->text = out.p;
    return 0;
}

void sim_prog_free(sim_prog *p)
{
    free(p->text);
    p->text = NULL;
}
