/*
 * bcast.c — broadcast schedules: binomial tree, the postal model's
 * optimal multicast tree [NIC ch. 2], pipelined chain, and scatter +
 * ring allgather (van de Geijn). Ranks are relative to the root
 * (v = (rank - root) mod n); everything lands in the caller's buffer.
 */
#include "collectives/algs.h"

#include "collectives/tree.h"

/* Chain segments in flight: bounded so that a long message does not take
 * the whole request pool. */
#define CHAIN_MAX_SEGS 256u

static int32_t real_rank(const coll_sched *s, int32_t v, int32_t root)
{
    return (v + root) % s->size;
}

/* Receive the whole message from the parent, then send it to each child
 * in order. */
static void tree_bcast(coll_sched *s, size_t len, int32_t root, int32_t parent,
                       const int32_t *kids, int nkids)
{
    uint32_t got = CS_NONE;
    if (parent >= 0)
        got = cs_recv(s, real_rank(s, parent, root), CB_RECV, 0, len, 0);
    for (int k = 0; k < nkids; k++)
        cs_dep(s, got, cs_send(s, real_rank(s, kids[k], root), CB_RECV, 0, len, 0));
}

void coll_bcast_binomial(coll_sched *s, const coll_args *a)
{
    size_t len = a->count;
    int32_t root = a->root;
    int32_t v = (s->rank - root + s->size) % s->size, kids[32];
    int nk = tree_binomial_children(v, s->size, kids, 32);
    tree_bcast(s, len, root, tree_binomial_parent(v, s->size), kids, nk);
}

/* The tree of the postal model for lambda = latency / gap: the whole
 * tree is computed (O(n)); every member computes the same one. */
void coll_bcast_optimal_tree(coll_sched *s, const coll_args *a)
{
    size_t len = a->count;
    int32_t root = a->root;
    quay_engine *e = s->e;
    int32_t n = s->size, v = (s->rank - root + n) % n;
    uint64_t lam = e->cfg.coll_latency_ns * 1000 / e->cfg.coll_gap_ns;
    int32_t *parent = qalloc(e, (size_t)n * sizeof *parent);
    int32_t *first = qalloc(e, ((size_t)n + 1) * sizeof *first);
    int32_t *kids = qalloc(e, (size_t)n * sizeof *kids);
    uint64_t *scratch = qalloc(e, 4 * (size_t)n * sizeof *scratch);
    if (parent == NULL || first == NULL || kids == NULL || scratch == NULL) {
        s->err = QUAY_EAGAIN;
    } else {
        tree_postal(n, (uint32_t)(lam < 1000 ? 1000 : lam > UINT32_MAX ? UINT32_MAX : lam),
                    parent, first, kids, scratch);
        tree_bcast(s, len, root, parent[v], kids + first[v], first[v + 1] - first[v]);
    }
    qfree(e, parent);
    qfree(e, first);
    qfree(e, kids);
    qfree(e, scratch);
}

/* v receives segment i from v - 1 and passes it to v + 1 at once. */
void coll_bcast_chain(coll_sched *s, const coll_args *a)
{
    size_t len = a->count;
    int32_t root = a->root;
    const quay_config *cfg = &s->e->cfg;
    int32_t n = s->size, v = (s->rank - root + n) % n;
    size_t seg = cfg->coll_segment;
    if (seg == 0)
        seg = tree_chain_segment(len, n, cfg->coll_latency_ns, cfg->coll_ps_per_byte, 1024,
                                 CHAIN_MAX_SEGS);
    if (seg < (len + CHAIN_MAX_SEGS - 1) / CHAIN_MAX_SEGS)
        seg = (len + CHAIN_MAX_SEGS - 1) / CHAIN_MAX_SEGS;
    if (seg == 0)
        seg = 1;
    for (size_t off = 0, i = 0; off < len; off += seg, i++) {
        size_t n_i = len - off < seg ? len - off : seg;
        uint32_t got = CS_NONE;
        if (v > 0)
            got = cs_recv(s, real_rank(s, v - 1, root), CB_RECV, off, n_i, (uint32_t)i);
        if (v < n - 1)
            cs_dep(s, got, cs_send(s, real_rank(s, v + 1, root), CB_RECV, off, n_i, (uint32_t)i));
    }
}

/* Chunk c of n: bytes [c * chunk, min((c + 1) * chunk, len)). */
static size_t chunk_off(size_t c, size_t chunk, size_t len)
{
    size_t o = c * chunk;
    return o < len ? o : len;
}

/* Whether relative rank w holds chunk c after the scatter: the chunks of
 * its binomial subtree, [w, w + subtree(w)). */
static int scattered_to(int32_t w, int32_t n, int32_t c)
{
    return c >= w && c < w + tree_binomial_subtree(w, n);
}

/* Binomial scatter of chunks (v gets its subtree's chunks from its
 * parent), then a ring allgather: step j sends chunk v - j to the right
 * and receives chunk v - j - 1 from the left, except a chunk the receiver
 * already has from the scatter, which is neither sent nor received (its
 * sender forwards it from the scatter's copy). Sub-tags: 0 scatter, 1 + j
 * ring.
 *
 * So the ring writes only chunks outside this rank's subtree, which no
 * scatter step here reads or writes, and every ring receive is posted at
 * the start: a left neighbour that is steps ahead is matched on arrival.
 * (The ring used to receive its subtree's chunks again too, over the
 * scatter's sends, so all its receives waited for the scatter; early
 * ring messages then sat in the unexpected room, and with small pools
 * two ranks' rooms held each other's early messages while each one's
 * scatter send waited behind a refused message: a livelock.) */
void coll_bcast_scatter_allgather(coll_sched *s, const coll_args *a)
{
    size_t len = a->count;
    int32_t root = a->root;
    int32_t n = s->size, v = (s->rank - root + n) % n, kids[32];
    size_t chunk = (len + (size_t)n - 1) / (size_t)n;
    int32_t parent = tree_binomial_parent(v, n);
    uint32_t got = CS_NONE;
    if (parent >= 0) {
        size_t lo = chunk_off((size_t)v, chunk, len);
        size_t hi = chunk_off((size_t)v + (size_t)tree_binomial_subtree(v, n), chunk, len);
        got = cs_recv(s, real_rank(s, parent, root), CB_RECV, lo, hi - lo, 0);
    }
    int nk = tree_binomial_children(v, n, kids, 32);
    for (int k = 0; k < nk; k++) {
        size_t lo = chunk_off((size_t)kids[k], chunk, len);
        size_t hi = chunk_off((size_t)kids[k] + (size_t)tree_binomial_subtree(kids[k], n),
                              chunk, len);
        cs_dep(s, got, cs_send(s, real_rank(s, kids[k], root), CB_RECV, lo, hi - lo, 0));
    }
    int32_t w = (v + 1) % n; /* the right neighbour, relative */
    int32_t right = real_rank(s, w, root), left = real_rank(s, (v + n - 1) % n, root);
    uint32_t prev = got; /* what chunk v - j is in after (sending only reads) */
    for (int32_t j = 0; j < n - 1; j++) {
        int32_t cs = (v - j + n) % n, cr = (v - j - 1 + 2 * n) % n;
        size_t so = chunk_off((size_t)cs, chunk, len), ro = chunk_off((size_t)cr, chunk, len);
        if (!scattered_to(w, n, cs))
            cs_dep(s, prev, cs_send(s, right, CB_RECV, so,
                                    chunk_off((size_t)cs + 1, chunk, len) - so, 1 + (uint32_t)j));
        if (scattered_to(v, n, cr))
            prev = got;
        else
            prev = cs_recv(s, left, CB_RECV, ro, chunk_off((size_t)cr + 1, chunk, len) - ro,
                           1 + (uint32_t)j);
    }
}

/* The ring takes a sub-tag per step (more ranks: the registry's fallback,
 * the binomial tree). */
int coll_bcast_scatter_allgather_usable(const coll_args *a)
{
    return (uint32_t)a->size <= CS_SUBTAG_MAX;
}

/* Application bypass [NIC ch. 6]: a binomial tree through a staging
 * buffer. A rank receives into the staging buffer (posted by the call, or
 * by the arrival itself when the data comes first: an early schedule),
 * forwards from it to its children at once, and copies out once the call
 * is there (the gate). The sub-tag carries the root, so the arrival alone
 * says whom to forward to; the message length says how much to stage.
 * Sends to a child that forwards in turn ask to wake its host (NOTIFY). */
void coll_build_bcast_bypass(coll_sched *s, size_t len, int32_t root, int early)
{
    int32_t n = s->size, v = (s->rank - root + n) % n, kids[32], gk[32];
    uint32_t subtag = CS_BYPASS_BCAST + (uint32_t)root;
    if (len == 0)
        return; /* nothing to move, nothing arrives: as the plain one */
    int nk = tree_binomial_children(v, n, kids, 32);
    uint32_t got = CS_NONE;
    int from = CB_RECV;
    if (v != 0) {
        sched_tmp(s, len);
        got = cs_recv(s, real_rank(s, tree_binomial_parent(v, n), root), CB_TMP, 0, len, subtag);
        from = CB_TMP;
    }
    for (int k = 0; k < nk; k++) {
        uint32_t snd = cs_send(s, real_rank(s, kids[k], root), from, 0, len, subtag);
        cs_dep(s, got, snd);
        if (snd != CS_NONE && tree_binomial_children(kids[k], n, gk, 32) > 0)
            s->steps[snd].notify = 1;
    }
    if (v != 0) {
        uint32_t cp = cs_copy(s, CB_RECV, 0, CB_TMP, 0, len);
        cs_dep(s, got, cp);
        if (early) {
            s->gate = cs_join(s);
            cs_dep(s, s->gate, cp);
        }
    }
}

/* ---- the call ------------------------------------------------------------------- */

static uint32_t bcast_configured(const quay_config *c) { return c->coll_bcast; }

static int bcast_check(const quay_engine *e, const quay_offload *d)
{
    (void)e;
    if (d->count != 0 && d->rbuf == NULL)
        return QUAY_EINVAL;
    return d->root < 0 || d->root >= d->size ? QUAY_ERANK : 0;
}

static void bcast_args(const quay_offload *d, coll_args *a)
{
    a->root = d->root;
    a->in_place = d->sbuf == QUAY_IN_PLACE;
}

/* (The root sends from the buffer everyone else receives into.) */
static void bcast_bind(coll_sched *s, const quay_offload *d, const coll_args *a)
{
    (void)a;
    s->rbuf = d->rbuf;
    s->sbuf = d->rbuf;
}

static uint32_t bcast_choose(const coll_args *a)
{
    if (a->count < 12288 || a->size < 8)
        return QUAY_BCAST_BINOMIAL; /* latency bound: log n messages */
    if (a->count < 524288)
        return QUAY_BCAST_SCATTER_ALLGATHER; /* ~2 len per rank, log n + n steps */
    return QUAY_BCAST_CHAIN; /* bandwidth bound: pipelined, len per rank */
}

const coll_op coll_op_bcast = {
    .kind = QUAY_OFF_BCAST,
    .name = "bcast",
    .configured = bcast_configured,
    .check = bcast_check,
    .args = bcast_args,
    .bind = bcast_bind,
    .choose = bcast_choose,
    .counted = 1,
};

int quay_ibcast(quay_engine *e, quay_comm *c, void *buf, size_t len, int32_t root,
                quay_req **req)
{
    int rc = coll_call_args(e, c, req);
    if (rc != 0)
        return rc;
    if (buf == NULL && len != 0)
        return QUAY_EINVAL;
    if (root < 0 || root >= c->size)
        return QUAY_ERANK;
    quay_offload d = {.root = root, .rbuf = buf, .count = len};
    return coll_call(e, c, &coll_op_bcast, &d, req);
}
