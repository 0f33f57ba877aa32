/*
 * snapshot.c — quay_engine_save / quay_engine_restore: a channel's context
 * as a versioned, self-describing blob (layout in docs/flowctl.md).
 *
 * The driver: it frames the blob (magic, version, length, CRC32C), orders
 * the sections and runs the walker (engine/snap.h) over them in its three
 * modes: SAVE; CHECK, which validates the whole blob into scratch
 * bookkeeping without touching the channel; APPLY, only after a clean
 * CHECK, on the channel emptied by context_reset. Each section lives
 * beside the engine module it serialises; the link's part of each peer
 * record (flowctl/fc_snap.c) is handed to the walker as its link hooks.
 */
#include "context.h"

#include "engine/context_clear.h"
#include "engine/snap.h"
#include "flowctl/crc32c.h"
#include "flowctl/fc_snap.h"

#define SNAP_VERSION 6u
#define SNAP_HDR_LEN 16u /* magic 8, version 4, total length 4 */

static const uint8_t snap_magic[8] = {'Q', 'U', 'A', 'Y', 'C', 'T', 'X', 0};

/* ---- the whole blob ------------------------------------------------------------------ */

/* A walker in `mode` over channel e, the link's part of each peer record
 * walked by flow control. */
static void snap_start(snap *s, int mode, quay_engine *e)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->e = e;
    s->link = &fc_snap_link;
}

static void walk(snap *s)
{
    /* (regions after communicators: a region may be scoped to one) */
    static const uint32_t tags[10] = {SEC_IDENT, SEC_ENGINE,  SEC_REQIDS,
                                      SEC_COMMS, SEC_REGIONS, SEC_REQS,
                                      SEC_MSGS,  SEC_PEERS,   SEC_CTRL, SEC_RTR};
    static void (*const fns[10])(snap *) = {snap_ident, snap_engine, snap_reqids,
                                            snap_comms, snap_regions, snap_reqs,
                                            snap_msgs, snap_peers, snap_ctrl, snap_rtr};
    for (int i = 0; i < 10 && s->err == 0; i++) {
        size_t outer;
        size_t at = snap_sec_begin(s, tags[i], &outer);
        if (s->err == 0)
            fns[i](s);
        snap_sec_end(s, at, outer);
    }
}

static void put_u32(uint8_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The channel's sections written into buf[at..cap) (counted past cap,
 * nothing written there): 0 and *end, the offset after the last one, or
 * the walk's error. */
static int save_walk(const quay_engine *e, void *buf, size_t cap, size_t at, size_t *end)
{
    snap s;
    snap_start(&s, SNAP_SAVE, (quay_engine *)e); /* SAVE mode only reads it */
    s.out = buf;
    s.cap = buf != NULL ? cap : 0;
    s.pos = at;
    walk(&s);
    *end = s.pos;
    return s.err;
}

int quay_engine_save(const quay_engine *ce, void *buf, size_t cap, size_t *len)
{
    if (ce == NULL || len == NULL)
        return QUAY_EINVAL;
    *len = 0;
    int rc = context_switchable(ce);
    if (rc != 0)
        return rc;
    const quay_engine *e = ce;
    /* Every descriptor in use must be a queued packet (quiesce held it). */
    uint32_t queued = 0;
    for (int32_t p = 0; p < e->nranks; p++)
        for (const qout *o = fc_snap_link.queued(e, p, NULL); o != NULL;
             o = fc_snap_link.queued(e, p, o))
            queued++;
    if (queued != e->outs_used)
        return QUAY_EBUSY;

    size_t body_end;
    rc = save_walk(e, buf, cap, SNAP_HDR_LEN, &body_end);
    if (rc != 0)
        return rc;
    size_t total = body_end + 4;
    *len = total;
    if (buf == NULL || cap < total)
        return QUAY_ENOBUFS;
    if (total > UINT32_MAX)
        return QUAY_ENOTSUP;
    uint8_t *b = buf;
    memcpy(b, snap_magic, 8);
    put_u32(b + 8, SNAP_VERSION);
    put_u32(b + 12, (uint32_t)total);
    put_u32(b + total - 4, crc32c_update(e->crc_table, 0, b, total - 4));
    return 0;
}

size_t snapshot_state(const quay_engine *e, void *buf, size_t cap)
{
    size_t end;
    return save_walk(e, buf, cap, 0, &end) != 0 ? 0 : end;
}

static void snap_scratch_free(snap *s)
{
    quay_engine *e = s->e;
    qfree(e, s->req_live);
    qfree(e, s->req_nout);
    qfree(e, s->req_stamp);
    qfree(e, s->msg_live);
    qfree(e, s->rank_seen);
    qfree(e, s->region_seen);
    qfree(e, s->region_gen);
    qfree(e, s->region_int);
    qfree(e, s->credit_held);
    qfree(e, s->comm_live);
    qfree(e, s->comm_size);
    qfree(e, s->comm_ctx);
    qfree(e, s->slot_users);
    qfree(e, s->peer_arb);
}

static int snap_scratch(snap *s)
{
    quay_engine *e = s->e;
    s->req_live = qalloc(e, (size_t)e->nreqs * sizeof *s->req_live);
    s->req_nout = qalloc(e, (size_t)e->nreqs * sizeof *s->req_nout);
    s->req_stamp = qalloc(e, (size_t)e->nreqs * sizeof *s->req_stamp);
    s->msg_live = qalloc(e, e->nmsgs);
    s->rank_seen = qalloc(e, (size_t)e->nranks);
    s->region_seen = qalloc(e, e->mem.nregions);
    s->region_gen = qalloc(e, (size_t)e->mem.nregions * sizeof *s->region_gen);
    s->region_int = qalloc(e, e->mem.nregions);
    s->credit_held = qalloc(e, (size_t)e->nranks * sizeof *s->credit_held);
    s->comm_live = qalloc(e, e->ncomms_max);
    s->comm_size = qalloc(e, (size_t)e->ncomms_max * sizeof *s->comm_size);
    s->comm_ctx = qalloc(e, (size_t)e->ncomms_max * sizeof *s->comm_ctx);
    if (e->aslots != NULL) {
        s->slot_users = qalloc(e, (size_t)e->cfg.any_slots * sizeof *s->slot_users);
        s->peer_arb = qalloc(e, (size_t)e->nranks);
        if (!s->slot_users || !s->peer_arb)
            return QUAY_ENOMEM;
        memset(s->slot_users, 0, (size_t)e->cfg.any_slots * sizeof *s->slot_users);
        memset(s->peer_arb, 0, (size_t)e->nranks);
    }
    if (!s->req_live || !s->req_nout || !s->req_stamp || !s->msg_live || !s->rank_seen ||
        !s->credit_held || !s->region_seen ||
        (e->mem.nregions != 0 && (!s->region_gen || !s->region_int)) ||
        !s->comm_live || !s->comm_size || !s->comm_ctx)
        return QUAY_ENOMEM;
    memset(s->req_live, 0, (size_t)e->nreqs * sizeof *s->req_live);
    memset(s->region_seen, 0, e->mem.nregions);
    if (e->mem.nregions != 0) {
        memset(s->region_gen, 0, (size_t)e->mem.nregions * sizeof *s->region_gen);
        memset(s->region_int, 0, e->mem.nregions);
    }
    memset(s->credit_held, 0, (size_t)e->nranks * sizeof *s->credit_held);
    memset(s->msg_live, 0, e->nmsgs);
    memset(s->comm_live, 0, e->ncomms_max);
    memset(s->comm_size, 0, (size_t)e->ncomms_max * sizeof *s->comm_size);
    return 0;
}

/* Validate the blob against this channel without changing it. */
static int snap_check(quay_engine *e, const uint8_t *b, size_t len)
{
    if (len < SNAP_HDR_LEN + 4 || memcmp(b, snap_magic, 8) != 0 ||
        get_u32(b + 12) != len ||
        crc32c_update(e->crc_table, 0, b, len - 4) != get_u32(b + len - 4))
        return QUAY_ECORRUPT;
    if (get_u32(b + 8) != SNAP_VERSION)
        return QUAY_EVERSION;
    snap s;
    snap_start(&s, SNAP_CHECK, e);
    s.in = b;
    s.end = len - 4;
    s.pos = SNAP_HDR_LEN;
    int rc = snap_scratch(&s);
    if (rc == 0) {
        walk(&s);
        if (s.err == 0 && s.pos != s.end)
            snap_corrupt(&s);
        for (uint32_t i = 0; s.err == 0 && i < e->nreqs; i++)
            if ((s.req_live[i] & 1) && s.req_nout[i] != 0)
                snap_corrupt(&s); /* nout counts exactly its queued packets */
        rc = s.err;
    }
    snap_scratch_free(&s);
    return rc;
}

int quay_engine_restore(quay_engine *e, const void *blob, size_t len)
{
    if (e == NULL || (blob == NULL && len != 0))
        return QUAY_EINVAL;
    int rc = context_switchable(e);
    if (rc != 0)
        return rc;
    rc = snap_check(e, blob, len);
    if (rc != 0)
        return rc;
    context_reset(e, 0);
    snap s;
    snap_start(&s, SNAP_APPLY, e);
    s.in = blob;
    s.end = len - 4;
    s.pos = SNAP_HDR_LEN;
    walk(&s);
    if (s.err != 0) {
        context_reset(e, 0); /* out of memory half-way: leave it empty */
        return s.err;
    }
    context_rebuild_free(e); /* the slots restored above are taken */
    if (e->ubytes > e->ubytes_peak)
        e->ubytes_peak = e->ubytes;
    e->quiesced = 1;
    e->rare = 1; /* restored queues: the next idle pull looks everywhere */
    return 0;
}
