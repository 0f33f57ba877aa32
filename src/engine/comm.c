/*
 * comm.c — communicators: context ids, rank maps, lookup on arrival, and
 * messages that arrived for a context this engine has not created yet
 * (kept as orphans, adopted in arrival order by quay_comm_create).
 */
#include "engine/internal.h"

int comm_table_new(quay_engine *e, uint32_t max_comms)
{
    e->ncomms_max = 2 * max_comms;
    e->comms = qcalloc(e, e->ncomms_max, sizeof *e->comms);
    /* At most half full: a probe always ends at an empty bucket. */
    uint32_t idx = 2;
    while (idx < 2 * e->ncomms_max)
        idx *= 2;
    e->ctx_index_mask = idx - 1;
    e->ctx_index = qcalloc(e, idx, sizeof *e->ctx_index);
    return e->comms != NULL && e->ctx_index != NULL ? 0 : QUAY_ENOMEM;
}

void comm_table_free(quay_engine *e)
{
    qfree(e, e->comms);
    qfree(e, e->ctx_index);
    e->comms = NULL;
    e->ctx_index = NULL;
}

/* The context index's home bucket of ctx: the engine's seeded hash (a
 * peer cannot aim its contexts at one bucket), top bits. */
static uint32_t index_home(const quay_engine *e, uint32_t ctx)
{
    return (uint32_t)(comm_hkey(e->cfg.seed, ctx) >> 32) & e->ctx_index_mask;
}

quay_comm *comm_lookup_scan(quay_engine *e, uint32_t ctx)
{
    for (uint32_t b = index_home(e, ctx);; b = (b + 1) & e->ctx_index_mask) {
        uint32_t v = e->ctx_index[b];
        if (v == 0)
            return NULL; /* (the table is at most half full: an empty one comes) */
        quay_comm *c = &e->comms[v - 1];
        if (c->ctx == ctx) {
            e->last_comm = c;
            return c;
        }
    }
}

void comm_index_add(quay_engine *e, quay_comm *c)
{
    uint32_t b = index_home(e, c->ctx);
    while (e->ctx_index[b] != 0)
        b = (b + 1) & e->ctx_index_mask;
    e->ctx_index[b] = (uint32_t)(c - e->comms) + 1;
}

/* Remove c, closing the gap (backward shift: no tombstones, so probes
 * stay as short as the live entries make them). */
static void comm_index_del(quay_engine *e, const quay_comm *c)
{
    uint32_t m = e->ctx_index_mask, want = (uint32_t)(c - e->comms) + 1;
    uint32_t b = index_home(e, c->ctx);
    while (e->ctx_index[b] != want)
        b = (b + 1) & m;
    for (uint32_t j = (b + 1) & m; e->ctx_index[j] != 0; j = (j + 1) & m) {
        uint32_t h = index_home(e, e->comms[e->ctx_index[j] - 1].ctx);
        /* j's entry may fill the gap at b unless its home lies in (b, j] */
        if (((j - h) & m) >= ((j - b) & m)) {
            e->ctx_index[b] = e->ctx_index[j];
            b = j;
        }
    }
    e->ctx_index[b] = 0;
}

void comm_index_clear(quay_engine *e)
{
    e->comm_hint = 0;
    memset(e->ctx_index, 0, ((size_t)e->ctx_index_mask + 1) * sizeof *e->ctx_index);
}

/* Adopt orphans of this context, oldest first; drop those whose claimed
 * source rank does not map to the world rank they came from. */
static void comm_adopt_orphans(quay_engine *e, quay_comm *c)
{
    qlink *n = ql_first(&e->orphans);
    while (n != NULL) {
        qlink *next = ql_next(&e->orphans, n);
        umsg *m = QUAY_CONTAINER_OF(n, umsg, alink);
        if (m->ctx == c->ctx) {
            ql_remove(&m->alink);
            e->norphans--;
            if (comm_src_ok(c, m->src, m->peer)) {
                m->comm = c;
                match_add_unexp(e, c, m);
            } else {
                e->st.pkts_rejected++;
                umsg_free(e, m);
            }
        }
        n = next;
    }
}

int quay_comm_create(quay_engine *e, uint32_t ctx, int32_t nranks,
                     const int32_t *world_ranks, quay_comm **pc)
{
    if (e == NULL || pc == NULL || nranks <= 0)
        return QUAY_EINVAL;
    *pc = NULL;
    if (e->fatal)
        return e->fatal;
    if ((ctx & QUAY_CTX_COLL) || comm_lookup(e, ctx) != NULL)
        return QUAY_ECOMM; /* in use, or a collective twin's */
    int rc = comm_create(e, ctx, nranks, world_ranks, 0, pc);
    if (rc != 0 || !e->cfg.coll_bypass)
        return rc;
    /* Application bypass: a broadcast's data may come before this rank's
     * first collective; its twin must be there to see it. */
    quay_comm *c = *pc;
    rc = comm_create(e, ctx | QUAY_CTX_COLL, nranks, c->world, 1, &c->coll);
    if (rc != 0) {
        quay_comm_free(e, c);
        *pc = NULL;
        return QUAY_EAGAIN;
    }
    return 0;
}

int comm_create(quay_engine *e, uint32_t ctx, int32_t nranks, const int32_t *world_ranks,
                int internal, quay_comm **pc)
{
    if (world_ranks == NULL && nranks != e->nranks)
        return QUAY_EINVAL;
    if (comm_lookup(e, ctx) != NULL)
        return QUAY_ECOMM;
    /* max_comms bounds every communicator that is not a twin, the program's
     * and a NIC agent's alike (a saved context with more is refused). */
    if (!internal && e->ncomms_user >= e->cfg.max_comms)
        return QUAY_EAGAIN;
    int32_t myrank = -1;
    for (int32_t i = 0; i < nranks; i++) {
        int32_t w = world_ranks ? world_ranks[i] : i;
        if (w < 0 || w >= e->nranks)
            return QUAY_ERANK;
        if (w == e->rank && myrank < 0)
            myrank = i;
    }
    if (myrank < 0)
        return QUAY_ERANK;
    if (world_ranks != NULL) {
        /* A world rank may appear once (MPI groups are sets). */
        uint8_t *seen = qalloc(e, (size_t)e->nranks);
        if (seen == NULL)
            return QUAY_EAGAIN;
        memset(seen, 0, (size_t)e->nranks);
        int dup = 0;
        for (int32_t i = 0; i < nranks && !dup; i++)
            dup = seen[world_ranks[i]]++ != 0;
        qfree(e, seen);
        if (dup)
            return QUAY_EINVAL;
    }
    /* The lowest free slot (deterministic, as saved contexts name slots),
     * found from a bound below which every slot is in use. */
    quay_comm *c = NULL;
    for (uint32_t i = e->comm_hint; i < e->ncomms_max; i++) {
        if (!e->comms[i].in_use) {
            c = &e->comms[i];
            e->comm_hint = i + 1;
            break;
        }
    }
    if (c == NULL)
        return QUAY_EAGAIN;
    int32_t *world = qalloc(e, (size_t)nranks * sizeof *world);
    qlink *src = qalloc(e, (size_t)nranks * sizeof *src);
    if (world == NULL || src == NULL) {
        qfree(e, world);
        qfree(e, src);
        return QUAY_EAGAIN;
    }
    qfree(e, c->world);
    qfree(e, c->unexp_src);
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->hkey = comm_hkey(e->cfg.seed, ctx);
    c->size = nranks;
    c->myrank = myrank;
    c->world = world;
    c->unexp_src = src;
    for (int32_t i = 0; i < nranks; i++) {
        world[i] = world_ranks ? world_ranks[i] : i;
        ql_init(&src[i]);
    }
    comm_note_identity(c);
    ql_init(&c->posted_wild);
    ql_init(&c->unexp_all);
    c->in_use = 1;
    comm_index_add(e, c);
    c->internal = (uint8_t)(internal != 0);
    e->ncomms++;
    if (!internal)
        e->ncomms_user++;
    comm_adopt_orphans(e, c);
    *pc = c;
    return 0;
}

/* Release a communicator slot (no requests, no unexpected messages). */
static void comm_release(quay_engine *e, quay_comm *c)
{
    arb_comm_freed(e, c->ctx);
    comm_index_del(e, c);
    if ((uint32_t)(c - e->comms) < e->comm_hint)
        e->comm_hint = (uint32_t)(c - e->comms);
    qfree(e, c->world);
    qfree(e, c->unexp_src);
    c->world = NULL;
    c->unexp_src = NULL;
    c->in_use = 0;
    if (e->last_comm == c)
        e->last_comm = NULL;
    e->ncomms--;
    if (!c->internal)
        e->ncomms_user--;
    c->coll = NULL;
    c->internal = 0;
}

int quay_comm_free(quay_engine *e, quay_comm *c)
{
    if (e == NULL || c == NULL || c < e->comms ||
        c >= e->comms + e->ncomms_max || !c->in_use || c->internal)
        return QUAY_EINVAL;
    quay_comm *twin = c->coll;
    if (c->nreqs != 0 || c->nunexp != 0 || mem_comm_in_use(e, c) ||
        (twin != NULL && (twin->nreqs != 0 || twin->nunexp != 0)))
        return QUAY_EBUSY;
    if (twin != NULL)
        comm_release(e, twin);
    comm_release(e, c);
    return 0;
}

void comm_note_identity(quay_comm *c)
{
    int32_t i = 0;
    while (i < c->size && c->world[i] == i)
        i++;
    c->identity = i == c->size;
}

int32_t quay_comm_rank(const quay_comm *c) { return c ? c->myrank : -1; }
int32_t quay_comm_size(const quay_comm *c) { return c ? c->size : -1; }
uint32_t quay_comm_context(const quay_comm *c) { return c ? c->ctx : 0; }

int32_t quay_comm_world_rank(const quay_comm *c, int32_t r)
{
    if (c == NULL || r < 0 || r >= c->size)
        return -1;
    return comm_world(c, r);
}
