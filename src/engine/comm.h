/*
 * comm.h — communicators (comm.c): context ids, rank maps, lookup.
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_COMM_H
#define QUAY_ENGINE_COMM_H

/* Communicator. */
struct quay_comm {
    uint32_t ctx;
    int32_t size;
    int32_t myrank;
    int in_use;
    int32_t *world;      /* comm rank -> world rank */
    uint8_t identity;    /* world[i] == i for every i: hot paths skip the map */
    qlink posted_wild;   /* (ANY_SOURCE, ANY_TAG) receives in post order */
    uint32_t nwild;      /* receives on posted_wild */
    uint32_t n_anysrc;   /* posted (ANY_SOURCE, tag) receives (in bins) */
    uint32_t n_anytag;   /* posted (src, ANY_TAG) receives (in bins) */
    qlink unexp_all;     /* unexpected messages in arrival order */
    qlink *unexp_src;    /* per source, arrival order (if unexp_by_src) */
    uint8_t unexp_by_src;/* the per-source lists and the (ctx, tag) bins hold */
    uint8_t unexp_by_tag;/* every unexpected message of the comm: made at
                            its first (src, ANY_TAG) / (ANY_SOURCE, tag)
                            lookup, kept from then on (match.c) */
    uint32_t nunexp;
    uint32_t nreqs;      /* requests referencing this comm */
    uint32_t nplain;     /* posted receives not delegated by an RTR: while
                            any is pending no receive of the comm may be
                            delegated (it could be owed a message first) */
    struct quay_comm *coll; /* its collective twin (context | QUAY_CTX_COLL),
                               created at its first collective, or NULL */
    uint8_t internal;    /* a collective twin: not the user's to use */
    uint32_t coll_seq;   /* collectives called on it so far */
    uint64_t hkey;       /* its context mixed with the engine's seed: the
                            posted bins' hash term (match_fast.h) */
};
/* A communicator's hkey for context ctx under the engine's seed. */
static inline uint64_t comm_hkey(uint64_t seed, uint32_t ctx)
{
    return seed ^ ((uint64_t)ctx * 0xff51afd7ed558ccdull);
}
/* The bit that makes a communicator's context id its collective twin's.
 * User context ids are below it. */
#define QUAY_CTX_COLL 0x80000000u

/* ---- communicators (comm.c) -------------------------------------------- */
/** Allocate the communicator slots (each user communicator may get a
 *  collective twin) and their context index: 0 or QUAY_ENOMEM (the
 *  engine's teardown frees what was allocated, comm_table_free). */
int comm_table_new(quay_engine *e, uint32_t max_comms);
void comm_table_free(quay_engine *e);
quay_comm *comm_lookup_scan(quay_engine *e, uint32_t ctx);
/** Enter live communicator c in the context index (creation, restore). */
void comm_index_add(quay_engine *e, quay_comm *c);
/** Empty the context index (every communicator gone: context clear). */
void comm_index_clear(quay_engine *e);
/* The communicator of context ctx, or NULL: the last one found first,
 * else through the context index (a seeded hash of live communicators'
 * context ids: an unknown context costs a few probes, whatever a peer
 * claims). */
static inline quay_comm *comm_lookup(quay_engine *e, uint32_t ctx)
{
    quay_comm *c = e->last_comm;
    if (c != NULL && c->ctx == ctx && c->in_use)
        return c;
    return comm_lookup_scan(e, ctx);
}
/* c is a user's live communicator of engine e (checked before any read of
 * it: a pointer outside the pool is refused). */
static inline int comm_ok(const quay_engine *e, const quay_comm *c)
{
    return pool_slot(e->comms, e->ncomms_max, sizeof *c, c) && c->in_use && !c->internal;
}
/** Set c->identity from its map (after the map is filled). */
void comm_note_identity(quay_comm *c);
/** World rank of comm rank `r` (in range). */
static inline int32_t comm_world(const quay_comm *c, int32_t r)
{
    return c->identity ? r : c->world[r];
}
/** Comm rank of world rank `peer` claimed as `src`: 1 if consistent. */
static inline int comm_src_ok(const quay_comm *c, int32_t src, int32_t peer)
{
    return src >= 0 && src < c->size && comm_world(c, src) == peer;
}
/** Create a communicator (quay_comm_create without the user's checks on
 *  ctx); internal marks a collective twin. */
int comm_create(quay_engine *e, uint32_t ctx, int32_t nranks, const int32_t *world_ranks,
                int internal, quay_comm **pc);

#endif /* QUAY_ENGINE_COMM_H */
