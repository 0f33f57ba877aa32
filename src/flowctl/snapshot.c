/*
 * snapshot.c — quay_engine_save / quay_engine_restore: a channel's context
 * as a versioned, self-describing blob (layout in docs/flowctl.md).
 *
 * One walker describes the format once and runs in three modes: SAVE reads
 * the channel and writes the blob; CHECK reads the blob into scratch
 * objects and validates every field and cross-reference without touching
 * the channel; APPLY runs only after a clean CHECK, on an emptied channel,
 * and rebuilds the context in place. Objects the user holds (requests,
 * communicators, taken messages) return to the pool slots they had, so
 * their handles stay valid; lists are saved in order as slot indices and
 * rebuilt through the same insertion calls the protocols use.
 *
 * Integers are little-endian. Pointers to user memory (buffers, user
 * data, the attached buffer) are saved as addresses: a blob belongs to the
 * process that saved it. Everything else is checked.
 */
#include "flowctl/chan.h"

#include <stdlib.h> /* qsort */

#include "engine/match_oracle.h"
#include "flowctl/crc32c.h"

#define SNAP_VERSION 5u
#define SNAP_NONE UINT32_MAX
#define SNAP_HDR_LEN 16u /* magic 8, version 4, total length 4 */

static const uint8_t snap_magic[8] = {'Q', 'U', 'A', 'Y', 'C', 'T', 'X', 0};

enum { SNAP_SAVE, SNAP_CHECK, SNAP_APPLY };
enum { ARB_FLAG = 1, ARB_QUEUED = 2 };

/* Section tags (four characters, little-endian). */
#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define SEC_IDENT TAG('I', 'D', 'N', 'T')
#define SEC_ENGINE TAG('E', 'N', 'G', 'N')
#define SEC_REQIDS TAG('R', 'I', 'D', 'S')
#define SEC_REGIONS TAG('R', 'E', 'G', 'N')
#define SEC_COMMS TAG('C', 'O', 'M', 'M')
#define SEC_REQS TAG('R', 'E', 'Q', 'S')
#define SEC_MSGS TAG('M', 'S', 'G', 'S')
#define SEC_PEERS TAG('P', 'E', 'E', 'R')
#define SEC_CTRL TAG('C', 'T', 'R', 'L')
#define SEC_RTR TAG('R', 'T', 'R', 'S')

/* Where a saved message belongs (its list decides; the record repeats it). */

typedef struct snap {
    int mode;
    quay_engine *e;
    uint8_t *out;       /* SAVE: bytes past cap are counted, not written */
    size_t cap;
    const uint8_t *in;  /* CHECK / APPLY */
    size_t end;         /* current section's end */
    size_t pos;
    int err;            /* sticky: QUAY_ECORRUPT / QUAY_EFOREIGN / ENOMEM */
    /* CHECK bookkeeping (allocated for the check, NULL otherwise) */
    uint16_t *req_live; /* per slot: 1 live; 2/4/8/16 listed as posted / on
                           txq / on cq / on rdmaq; 32/64/128/256 its state
                           says it must be */
    uint32_t *req_nout; /* per slot: saved nout, then minus outs found */
    uint64_t *req_stamp;
    uint8_t *msg_live;
    uint8_t *rank_seen;
    uint8_t *region_seen;
    uint32_t *region_gen; /* per slot: generation read (CHECK) */
    uint8_t *region_int;  /* per slot: live and internal (CHECK) */
    uint32_t fin_owed;    /* requests holding a control slot for a FIN */
    uint32_t *credit_held; /* per peer: restored messages holding credit */
    uint8_t *comm_live;
    int32_t *comm_size; /* per comm slot: size (0 when not live) */
    uint32_t *slot_users; /* per announcement slot: RECV_ANY naming it */
    uint8_t *peer_arb;    /* per peer: ARB_FLAG / ARB_QUEUED sends to it */
    uint32_t *comm_ctx;
    /* values read from the blob */
    uint64_t saved_now, saved_stamp;
    size_t bs_len;
    uint32_t bs_blocks;     /* internal requests holding a block */
    uint32_t bs_nused;
    uint64_t ubytes;
    uint32_t nposted, ntxq, ncq, nrdma; /* flags counted over live requests */
} snap;

/* ---- primitives ------------------------------------------------------------- */

static void corrupt(snap *s)
{
    if (s->err == 0)
        s->err = QUAY_ECORRUPT;
}

static void raw(snap *s, uint8_t *b, size_t n)
{
    if (s->mode == SNAP_SAVE) {
        if (s->pos <= s->cap && n <= s->cap - s->pos)
            memcpy(s->out + s->pos, b, n);
        s->pos += n;
        return;
    }
    if (s->err != 0 || n > s->end - s->pos) {
        corrupt(s);
        memset(b, 0, n);
        return;
    }
    memcpy(b, s->in + s->pos, n);
    s->pos += n;
}

/* CHECK: step over n bytes of the blob. */
static void skip(snap *s, uint64_t n)
{
    if (s->err != 0 || n > s->end - s->pos)
        corrupt(s);
    else
        s->pos += (size_t)n;
}

static void sx_u64(snap *s, uint64_t *v)
{
    uint8_t b[8];
    if (s->mode == SNAP_SAVE)
        for (int i = 0; i < 8; i++)
            b[i] = (uint8_t)(*v >> (8 * i));
    raw(s, b, 8);
    if (s->mode != SNAP_SAVE) {
        uint64_t x = 0;
        for (int i = 0; i < 8; i++)
            x |= (uint64_t)b[i] << (8 * i);
        *v = x;
    }
}

static void sx_u32(snap *s, uint32_t *v)
{
    uint8_t b[4];
    if (s->mode == SNAP_SAVE)
        for (int i = 0; i < 4; i++)
            b[i] = (uint8_t)(*v >> (8 * i));
    raw(s, b, 4);
    if (s->mode != SNAP_SAVE)
        *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
             (uint32_t)b[3] << 24;
}

static void sx_i32(snap *s, int32_t *v)
{
    uint32_t u = (uint32_t)*v;
    sx_u32(s, &u);
    *v = (int32_t)u;
}

static void sx_u16(snap *s, uint16_t *v)
{
    uint32_t u = *v;
    sx_u32(s, &u);
    if (u > UINT16_MAX)
        corrupt(s);
    *v = (uint16_t)u;
}

static void sx_u8(snap *s, uint8_t *v)
{
    raw(s, v, 1);
}

static void sx_size(snap *s, size_t *v)
{
    uint64_t u = *v;
    sx_u64(s, &u);
    if (u > SIZE_MAX)
        corrupt(s);
    *v = (size_t)u;
}

/* A pointer into user memory, kept as its address. */
#define SX_PTR(s, lv, type)                                  \
    do {                                                     \
        uint64_t pv_ = (uint64_t)(uintptr_t)(lv);            \
        sx_u64((s), &pv_);                                   \
        if ((s)->mode != SNAP_SAVE)                          \
            (lv) = (type)(uintptr_t)pv_;                     \
    } while (0)

/* A count of at most `max` things. */
static uint32_t sx_count(snap *s, uint32_t n, uint32_t max)
{
    sx_u32(s, &n);
    if (n > max) {
        corrupt(s);
        return 0;
    }
    return n;
}

/* An index into a pool of n slots (or SNAP_NONE if none_ok). */
static int bad_index(uint32_t i, uint32_t n, int none_ok)
{
    return i == SNAP_NONE ? !none_ok : i >= n;
}

/* Sections: tag, body length, body. SAVE patches the length. */
static size_t sec_begin(snap *s, uint32_t tag, size_t *outer_end)
{
    uint32_t t = tag, n = 0;
    sx_u32(s, &t);
    if (t != tag)
        corrupt(s);
    size_t at = s->pos;
    sx_u32(s, &n);
    *outer_end = s->end;
    if (s->mode != SNAP_SAVE) {
        if (s->err == 0 && n > s->end - s->pos)
            corrupt(s);
        else
            s->end = s->pos + n;
    }
    return at;
}

static void sec_end(snap *s, size_t at, size_t outer_end)
{
    if (s->mode == SNAP_SAVE) {
        size_t n = s->pos - at - 4;
        if (at + 4 <= s->cap)
            for (int i = 0; i < 4; i++)
                s->out[at + (size_t)i] = (uint8_t)(n >> (8 * i));
        return;
    }
    if (s->err == 0 && s->pos != s->end)
        corrupt(s);
    s->end = outer_end;
}

/* ---- identity: the blob fits this channel ------------------------------------ */

static void sx_ident(snap *s)
{
    quay_engine *e = s->e;
    const quay_config *c = &e->cfg;
    /* Every field that shapes the state or the wire, as saved. */
    uint64_t v[30] = {
        (uint64_t)(uint32_t)c->rank, (uint64_t)(uint32_t)c->nranks, e->chan_id,
        c->channels, c->flags, c->seed, c->eager_max, c->frag_size,
        c->pipeline_depth, c->max_packet, c->max_requests, c->max_unexpected,
        c->unexpected_bytes_max, c->max_out, c->max_ctrl, c->max_comms,
        c->reorder_window, c->transport_caps, c->flow, c->flow_window,
        c->rto_init_ns, c->rto_max_ns, c->retry_limit, c->flow_credits,
        c->max_regions, c->rndv_mode, c->rtr, c->rtr_per_peer,
        c->rtr_any, c->any_slots,
    };
    uint32_t n = 30;
    sx_u32(s, &n);
    if (s->mode != SNAP_SAVE && s->err == 0 && n != 30) {
        s->err = QUAY_EFOREIGN;
        return;
    }
    for (uint32_t i = 0; i < 30; i++) {
        uint64_t x = v[i];
        sx_u64(s, &x);
        if (s->mode != SNAP_SAVE && s->err == 0 && x != v[i])
            s->err = QUAY_EFOREIGN;
    }
}

/* ---- engine scalars ------------------------------------------------------------ */

static void sx_engine(snap *s)
{
    quay_engine *e = s->e;
    int apply = s->mode == SNAP_APPLY;
    uint32_t key = e->ctx_key, rr = e->chan_rr;
    uint64_t stamp = e->stamp, now = e->now, allocs = e->reqs_allocs;
    uint64_t idle = e->ka_idle_at, ka = e->ka_next;
    sx_u32(s, &key);
    sx_u64(s, &stamp);
    sx_u64(s, &now);
    sx_u64(s, &allocs);
    sx_u64(s, &idle);
    sx_u64(s, &ka);
    sx_u32(s, &rr);
    uint8_t *bbuf = e->bs.buf;
    size_t blen = e->bs.len;
    uint32_t bused = e->bs.nused;
    SX_PTR(s, bbuf, uint8_t *);
    sx_size(s, &blen);
    sx_u32(s, &bused);
    if (rr > (uint32_t)e->nranks || (bbuf == NULL && (blen != 0 || bused != 0)))
        corrupt(s);
    s->saved_now = now;
    s->saved_stamp = stamp;
    s->bs_len = blen;
    s->bs_nused = bused;
    if (!apply)
        return;
    /* Timers restart from the channel's clock (it ran on meanwhile). */
    e->ctx_key = key;
    if (now > e->now)
        e->now = now;
    e->stamp = stamp;
    e->reqs_allocs = allocs > e->reqs_allocs ? allocs : e->reqs_allocs;
    e->ka_idle_at = idle;
    e->ka_next = ka != 0 ? ka + (e->now - now) : 0;
    e->chan_rr = rr;
    e->bs.buf = bbuf;
    e->bs.len = blen;
    e->bs.nused = bused;
}

/* ---- request ids (generations of every slot) ------------------------------------ */

static void sx_reqids(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, e->nreqs, e->nreqs);
    if (n != e->nreqs)
        corrupt(s);
    for (uint32_t i = 0; i < n && s->err == 0; i++) {
        uint32_t id = e->reqs[i].id;
        sx_u32(s, &id);
        if ((id & REQ_IDX_MASK) != i)
            corrupt(s);
        if (s->mode == SNAP_APPLY)
            e->reqs[i].id = id;
    }
}

/* ---- registered regions (generations of every slot, then the live ones) -------- */

static void sx_regions(snap *s)
{
    quay_engine *e = s->e;
    mem_table *t = &e->mem;
    uint32_t n = sx_count(s, t->nregions, t->nregions);
    if (n != t->nregions)
        corrupt(s);
    for (uint32_t i = 0; i < n && s->err == 0; i++) {
        uint32_t gen = t->regions[i].gen;
        sx_u32(s, &gen);
        if (s->mode == SNAP_CHECK)
            s->region_gen[i] = gen;
        if (s->mode == SNAP_APPLY)
            t->regions[i].gen = gen;
    }
    uint32_t live = sx_count(s, t->used, t->nregions);
    uint32_t slot = 0;
    uint8_t *seen = s->mode == SNAP_CHECK ? s->region_seen : NULL;
    for (uint32_t k = 0; k < live && s->err == 0; k++) {
        mregion tmp, *m = &tmp;
        memset(&tmp, 0, sizeof tmp);
        if (s->mode == SNAP_SAVE) {
            while (!t->regions[slot].in_use)
                slot++;
            m = &t->regions[slot];
        }
        uint32_t idx = slot++;
        sx_u32(s, &idx);
        SX_PTR(s, m->base, void *);
        sx_u64(s, &m->len);
        sx_u8(s, &m->access);
        sx_u8(s, &m->internal);
        sx_i32(s, &m->scope);
        sx_u32(s, &m->scope_comm);
        if (s->mode == SNAP_SAVE)
            continue;
        /* A scope is a world rank, or a live user communicator (CHECK
         * knows which are: APPLY runs only on a blob CHECK passed). */
        int comm_ok = s->mode != SNAP_CHECK || m->scope != MEM_SCOPE_COMM ||
                      (m->scope_comm < e->ncomms_max && s->comm_live[m->scope_comm] &&
                       !(s->comm_ctx[m->scope_comm] & QUAY_CTX_COLL) && !m->internal);
        if (s->err != 0 || idx >= t->nregions || m->access == 0 ||
            (m->access & ~(uint32_t)(QUAY_MEM_READ | QUAY_MEM_WRITE)) || m->internal > 1 ||
            (m->base == NULL && m->len != 0) || m->scope < MEM_SCOPE_NONE ||
            m->scope >= e->nranks || !comm_ok) {
            corrupt(s);
            return;
        }
        if (seen != NULL) {
            if (seen[idx])
                corrupt(s);
            seen[idx] = 1;
            s->region_int[idx] = m->internal;
            continue;
        }
        mregion *d = &t->regions[idx];
        d->base = m->base;
        d->len = m->len;
        d->access = m->access;
        d->internal = m->internal;
        d->scope = m->scope;
        d->scope_comm = m->scope_comm;
        d->in_use = 1;
        t->used++;
        if (d->scope == MEM_SCOPE_COMM)
            t->comm_scoped++;
    }
}

/* ---- communicators --------------------------------------------------------------- */

/* A collective twin (context | QUAY_CTX_COLL) belongs to the user
 * communicator of its context, with the same size and rank: CHECK that
 * it has one, APPLY links it. */
static void comms_link_twins(snap *s)
{
    quay_engine *e = s->e;
    if (s->mode == SNAP_SAVE || s->err != 0)
        return;
    uint32_t nuser = 0;
    for (uint32_t i = 0; i < e->ncomms_max; i++)
        nuser += s->mode == SNAP_CHECK && s->comm_live[i] && !(s->comm_ctx[i] & QUAY_CTX_COLL);
    if (nuser > e->cfg.max_comms)
        corrupt(s);
    for (uint32_t i = 0; i < e->ncomms_max; i++) {
        uint32_t ctx;
        int32_t size;
        if (s->mode == SNAP_CHECK) {
            if (!s->comm_live[i] || !(s->comm_ctx[i] & QUAY_CTX_COLL))
                continue;
            ctx = s->comm_ctx[i];
            size = s->comm_size[i];
        } else {
            if (!e->comms[i].in_use || !e->comms[i].internal)
                continue;
            ctx = e->comms[i].ctx;
            size = e->comms[i].size;
        }
        uint32_t p = 0;
        for (; p < e->ncomms_max; p++) {
            int live = s->mode == SNAP_CHECK ? s->comm_live[p] : e->comms[p].in_use;
            uint32_t pctx = s->mode == SNAP_CHECK ? s->comm_ctx[p] : e->comms[p].ctx;
            if (live && pctx == (ctx & ~QUAY_CTX_COLL))
                break;
        }
        int32_t psize = p == e->ncomms_max ? 0
                        : s->mode == SNAP_CHECK ? s->comm_size[p] : e->comms[p].size;
        if (psize != size)
            corrupt(s);
        else if (s->mode == SNAP_APPLY)
            e->comms[p].coll = &e->comms[i];
    }
}

static void sx_comms(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = 0;
    if (s->mode == SNAP_SAVE)
        n = e->ncomms;
    n = sx_count(s, n, e->ncomms_max);
    uint32_t slot = 0;
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        quay_comm tmp, *c = &tmp;
        memset(&tmp, 0, sizeof tmp);
        if (s->mode == SNAP_SAVE) {
            while (!e->comms[slot].in_use)
                slot++;
            c = &e->comms[slot];
        }
        uint32_t idx = slot++;
        sx_u32(s, &idx);
        sx_u32(s, &c->ctx);
        sx_i32(s, &c->size);
        sx_i32(s, &c->myrank);
        sx_u32(s, &c->coll_seq);
        if (s->mode == SNAP_SAVE) {
            for (int32_t i = 0; i < c->size; i++)
                sx_i32(s, &c->world[i]);
            continue;
        }
        if (idx >= e->ncomms_max || c->size <= 0 || c->size > e->nranks ||
            c->myrank < 0 || c->myrank >= c->size) {
            corrupt(s);
            return;
        }
        if (s->mode == SNAP_CHECK) {
            if (s->comm_live[idx])
                corrupt(s);
            for (uint32_t j = 0; j < e->ncomms_max; j++)
                if (s->comm_live[j] && s->comm_ctx[j] == c->ctx)
                    corrupt(s); /* context ids are unique */
            s->comm_live[idx] = 1;
            s->comm_size[idx] = c->size;
            s->comm_ctx[idx] = c->ctx;
            /* The map: in range, each world rank once, ours at myrank. */
            uint8_t *seen = s->rank_seen;
            memset(seen, 0, (size_t)e->nranks);
            for (int32_t i = 0; i < c->size; i++) {
                int32_t w = 0;
                sx_i32(s, &w);
                if (w < 0 || w >= e->nranks || seen[w] ||
                    (i == c->myrank) != (w == e->rank))
                    corrupt(s);
                else
                    seen[w] = 1;
            }
            continue;
        }
        /* APPLY */
        quay_comm *d = &e->comms[idx];
        d->world = qalloc(e, (size_t)c->size * sizeof *d->world);
        d->unexp_src = qalloc(e, (size_t)c->size * sizeof *d->unexp_src);
        if (d->world == NULL || d->unexp_src == NULL) {
            s->err = QUAY_ENOMEM;
            return;
        }
        d->ctx = c->ctx;
        d->hkey = comm_hkey(e->cfg.seed, c->ctx);
        d->size = c->size;
        d->myrank = c->myrank;
        d->coll_seq = c->coll_seq;
        d->internal = (c->ctx & QUAY_CTX_COLL) != 0;
        for (int32_t i = 0; i < c->size; i++) {
            sx_i32(s, &d->world[i]);
            ql_init(&d->unexp_src[i]);
        }
        comm_note_identity(d);
        ql_init(&d->posted_wild);
        ql_init(&d->unexp_all);
        d->in_use = 1;
        e->ncomms++;
        e->ncomms_user += !d->internal;
    }
    comms_link_twins(s);
}

/* ---- requests ------------------------------------------------------------------- */

static int req_state_ok(const quay_req *r)
{
    if (r->state == QUAY_RS_DONE)
        return 1;
    if (r->kind == RK_SEND)
        return r->state >= QUAY_RS_SEND_EAGER && r->state <= QUAY_RS_SEND_QUEUED;
    if (r->kind == RK_RDMA)
        return r->state == QUAY_RS_RDMA;
    return r->state >= QUAY_RS_RECV_POSTED && r->state <= QUAY_RS_RECV_ANY;
}

/* In the posted queue (delegated or not). */
static int req_posted(const quay_req *r)
{
    return r->state == QUAY_RS_RECV_POSTED || r->state == QUAY_RS_RECV_RTR ||
           (r->state == QUAY_RS_RECV_ANY && !(r->flags & RF_ANY_CLAIMED));
}

/* An internal region key of this channel, live in the blob (CHECK). */
static int lkey_ok(const snap *s, uint64_t key)
{
    uint32_t idx, gen;
    if (mem_key_parse(s->e, key, &idx, &gen) != 0)
        return 0;
    return s->region_seen[idx] && s->region_int[idx] && s->region_gen[idx] == gen;
}

/* The RDMA rendezvous fields of r are consistent with its state. */
static int req_rdma_ok(const snap *s, const quay_req *r)
{
    int rdma_state = r->state == QUAY_RS_SEND_PUT || r->state == QUAY_RS_RECV_GET ||
                     r->state == QUAY_RS_RECV_PUT || r->state == QUAY_RS_SEND_WRITE;
    if (r->state == QUAY_RS_RECV_RTR &&
        (r->lkey == 0 || r->rank < 0 || s->e->rtr_pool == NULL))
        return 0; /* delegated: a specific source, its buffer exposed */
    /* Arbitration: an announced wildcard exposes its buffer and names its
     * slot; a claim names its sender; flags and queues need it on. */
    if (r->state == QUAY_RS_RECV_ANY &&
        (r->lkey == 0 || r->rank != QUAY_ANY_SOURCE || s->e->aslots == NULL ||
         r->slot == 0 || r->slot > s->e->cfg.any_slots ||
         ((r->flags & RF_ANY_CLAIMED) && (r->peer < 0 || r->peer == s->e->rank))))
        return 0;
    if (r->state != QUAY_RS_RECV_ANY && r->kind == RK_RECV && r->slot != 0)
        return 0;
    if ((r->flags & RF_ANY_CLAIMED) && r->state != QUAY_RS_RECV_ANY)
        return 0;
    if ((r->state == QUAY_RS_SEND_ANY || r->state == QUAY_RS_SEND_QUEUED) &&
        (s->e->aslots == NULL || r->peer < 0 || r->peer == s->e->rank ||
         (r->flags & (RF_ON_RDMAQ | RF_RNDV))))
        return 0;
    if ((r->flags & RF_ANY_CANCEL) && r->state != QUAY_RS_SEND_ANY)
        return 0;
    int saved = r->state == QUAY_RS_SEND_CANCEL ? r->saved_state : r->state;
    if (r->lkey != 0 && !(((r->flags & RF_GET_OFFER) && saved == QUAY_RS_SEND_RTS) ||
                          r->state == QUAY_RS_RECV_PUT || r->state == QUAY_RS_RECV_RTR ||
                          r->state == QUAY_RS_RECV_ANY))
        return 0;
    if (r->lkey != 0 && !lkey_ok(s, r->lkey))
        return 0;
    if (r->state == QUAY_RS_RECV_PUT && r->lkey == 0)
        return 0;
    if (((r->flags & RF_FIN_OWED) != 0) != (r->state == QUAY_RS_RECV_GET))
        return 0;
    if ((r->flags & RF_ON_RDMAQ) &&
        !(r->state == QUAY_RS_RDMA || r->state == QUAY_RS_SEND_PUT ||
          r->state == QUAY_RS_SEND_WRITE || r->state == QUAY_RS_RECV_GET))
        return 0;
    if (r->state == QUAY_RS_RDMA && !(r->flags & RF_ON_RDMAQ))
        return 0; /* stable: an unissued action waits on the queue */
    if (rdma_state &&
        (r->accepted > r->len || r->next_frag > r->nfrags || r->frags_done > r->next_frag ||
         (r->nfrags != 0 && (r->frag == 0 || (uint64_t)r->frag * r->nfrags < r->accepted))))
        return 0;
    return 1;
}

static int req_fields_ok(const snap *s, const quay_req *r, uint32_t ci, uint32_t boff)
{
    const quay_engine *e = s->e;
    if ((r->kind != RK_SEND && r->kind != RK_RECV && r->kind != RK_RDMA &&
         !(r->kind == RK_COLL && r->state == QUAY_RS_DONE)) ||
        (r->flags & RF_COLL) || !req_state_ok(r) ||
        r->mode > QUAY_SEND_BUFFERED || r->saved_state >= QUAY_RS_COUNT_ ||
        (r->flags & ~RF_ALL_FLAGS) || r->peer < -1 || r->peer >= e->nranks ||
        r->stamp > s->saved_stamp)
        return 0;
    /* Persistent: the user's point-to-point requests only. */
    if ((r->flags & RF_PERSIST) &&
        ((r->kind != RK_SEND && r->kind != RK_RECV) || (r->flags & RF_INTERNAL)))
        return 0;
    if (ci != SNAP_NONE) {
        if (ci >= e->ncomms_max || !s->comm_live[ci] || s->comm_ctx[ci] != r->ctx)
            return 0;
        int32_t size = s->comm_size[ci];
        if (req_posted(r) &&
            !(r->rank == QUAY_ANY_SOURCE || (r->rank >= 0 && r->rank < size)))
            return 0;
        if (req_posted(r) && r->tag < QUAY_ANY_TAG)
            return 0;
        if (r->kind == RK_SEND && r->state != QUAY_RS_DONE &&
            (r->rank < 0 || r->rank >= size))
            return 0;
    } else if (r->kind == RK_RDMA) {
        if (r->state != QUAY_RS_DONE && (r->peer < 0 || r->peer == e->rank))
            return 0; /* one-sided to self completes at once */
    } else if (r->state != QUAY_RS_DONE) {
        return 0; /* only completed requests (PROC_NULL) lack a comm */
    }
    /* Rendezvous bookkeeping stays inside the buffer and its fragments
     * while transferring (a reused slot keeps old values otherwise, and
     * each side uses its own subset of the fields). */
    int sending = r->state == QUAY_RS_SEND_DATA ||
                  (r->state == QUAY_RS_SEND_CANCEL && r->saved_state == QUAY_RS_SEND_DATA);
    if ((sending || r->state == QUAY_RS_RECV_RNDV) &&
        (r->accepted > r->len || r->grant > r->nfrags ||
         (r->nfrags != 0 && (r->frag == 0 || (uint64_t)r->frag * r->nfrags < r->accepted))))
        return 0;
    if (sending && (r->next_frag > r->nfrags || r->frags_done > r->nfrags ||
                    r->cts_total > (r->nfrags != 0 ? r->nfrags : 1u)))
        return 0;
    if (r->state == QUAY_RS_RECV_RNDV && (r->received > r->accepted || r->base > r->nfrags))
        return 0;
    if (!req_rdma_ok(s, r))
        return 0;
    /* A buffered-send carrier owns a block of the attached buffer. */
    if (((r->flags & RF_INTERNAL) != 0) != (boff != SNAP_NONE))
        return 0;
    if (boff != SNAP_NONE &&
        (boff < QUAY_BSEND_OVERHEAD || boff > s->bs_len || r->len > s->bs_len - boff))
        return 0;
    return 1;
}

static void sx_req(snap *s, quay_req *r, uint32_t *ci, uint32_t *boff)
{
    sx_u8(s, &r->kind);
    sx_u8(s, &r->state);
    sx_u8(s, &r->mode);
    sx_u8(s, &r->saved_state);
    sx_u32(s, &r->flags);
    sx_u32(s, &r->nout);
    sx_u32(s, ci);
    sx_i32(s, &r->rank);
    sx_i32(s, &r->tag);
    sx_i32(s, &r->peer);
    sx_u32(s, &r->ctx);
    SX_PTR(s, r->u.rbuf, uint8_t *);
    sx_size(s, &r->len);
    sx_u64(s, &r->stamp);
    sx_i32(s, &r->status.source);
    sx_i32(s, &r->status.tag);
    sx_i32(s, &r->status.error);
    sx_i32(s, &r->status.cancelled);
    sx_u64(s, &r->status.count);
    SX_PTR(s, r->user, void *);
    sx_u32(s, &r->seq);
    sx_u32(s, &r->cancel_seq);
    sx_u32(s, &r->rreq);
    sx_u32(s, &r->sreq);
    sx_u64(s, &r->msg_len);
    sx_u64(s, &r->accepted);
    sx_u32(s, &r->frag);
    sx_u32(s, &r->nfrags);
    sx_u32(s, &r->grant);
    sx_u32(s, &r->next_frag);
    sx_u32(s, &r->frags_done);
    sx_u32(s, &r->base);
    sx_u64(s, &r->bitmap);
    sx_u64(s, &r->received);
    sx_u32(s, &r->ncts);
    sx_u64(s, &r->cts_bits);
    sx_u32(s, &r->cts_total);
    sx_u64(s, &r->rkey);
    sx_u64(s, &r->roff);
    sx_u64(s, &r->lkey);
    sx_u32(s, &r->slot);
    sx_u32(s, boff);
}

/* A request's slot index on the wire of the blob. */
static uint32_t req_index(const quay_engine *e, const quay_req *r)
{
    return r == NULL ? SNAP_NONE : (uint32_t)(r - e->reqs);
}

static int cmp_stamp(const void *a, const void *b)
{
    const quay_req *x = *(quay_req *const *)a, *y = *(quay_req *const *)b;
    return x->stamp < y->stamp ? -1 : x->stamp > y->stamp;
}

/* Index lists: posted receives in post order, txq, cq. */
static void sx_req_list(snap *s, int which, quay_req **order, uint32_t n_save)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, n_save, e->nreqs);
    uint16_t bit = (uint16_t)(2u << which);
    uint64_t last_stamp = 0;
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        uint32_t i = s->mode == SNAP_SAVE ? req_index(e, order[k]) : 0;
        sx_u32(s, &i);
        if (s->mode == SNAP_SAVE)
            continue;
        if (i >= e->nreqs) {
            corrupt(s);
            return;
        }
        if (s->mode == SNAP_CHECK) {
            if (!(s->req_live[i] & (32u << which)) || (s->req_live[i] & bit))
                corrupt(s); /* listed once, and only if its state says so */
            s->req_live[i] |= bit;
            if (which == 0) { /* posted receives, oldest first */
                if (s->req_stamp[i] <= last_stamp)
                    corrupt(s);
                last_stamp = s->req_stamp[i];
            }
            continue;
        }
        quay_req *r = &e->reqs[i];
        if (which == 0) {
            uint64_t st = r->stamp;
            match_add_posted(e, r); /* sets a new stamp: put the saved back */
            r->stamp = st;
        } else if (which == 1) {
            ql_push_tail(&e->txq, &r->link);
        } else if (which == 3) {
            ql_push_tail(&e->rdmaq, &r->link);
        } else {
            ql_push_tail(&e->cq, &r->clink);
        }
    }
    if (s->mode == SNAP_APPLY && which == 0)
        e->stamp = s->saved_stamp; /* match_add_posted counted on */
    if (s->mode == SNAP_CHECK) {
        uint32_t want = which == 0 ? s->nposted : which == 1 ? s->ntxq
                      : which == 2           ? s->ncq
                                             : s->nrdma;
        if (n != want)
            corrupt(s);
    }
}

/* CHECK: count what arbitration's tables must agree with (sx_arb). */
static void check_arb_req(snap *s, const quay_req *r)
{
    if (r->state == QUAY_RS_RECV_ANY) {
        s->slot_users[r->slot - 1]++; /* slot range: req_rdma_ok */
    } else if (r->state == QUAY_RS_SEND_ANY || r->state == QUAY_RS_SEND_QUEUED) {
        if (r->peer >= s->e->nranks) {
            corrupt(s);
            return;
        }
        uint8_t bit = r->state == QUAY_RS_SEND_ANY ? ARB_FLAG : ARB_QUEUED;
        if (bit == ARB_FLAG && (s->peer_arb[r->peer] & ARB_FLAG))
            corrupt(s); /* one flag per peer */
        s->peer_arb[r->peer] |= bit;
    }
}

static void sx_reqs(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, e->reqs_used, e->nreqs);
    uint32_t slot = 0;
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        quay_req tmp, *r = &tmp;
        memset(&tmp, 0, sizeof tmp);
        uint32_t ci = SNAP_NONE, boff = SNAP_NONE;
        if (s->mode == SNAP_SAVE) {
            while (e->reqs[slot].state == QUAY_RS_FREE)
                slot++;
            r = &e->reqs[slot];
            ci = r->comm ? (uint32_t)(r->comm - e->comms) : SNAP_NONE;
            if ((r->flags & RF_INTERNAL) && r->bsend_block != NULL)
                boff = (uint32_t)((uint8_t *)r->bsend_block - e->bs.buf);
        }
        uint32_t idx = slot++;
        sx_u32(s, &idx);
        sx_req(s, r, &ci, &boff);
        if (s->mode == SNAP_SAVE)
            continue;
        if (s->err != 0 || idx >= e->nreqs ||
            (s->mode == SNAP_CHECK && !req_fields_ok(s, r, ci, boff))) {
            corrupt(s);
            return;
        }
        if (s->mode == SNAP_CHECK) {
            if (s->req_live[idx])
                corrupt(s);
            s->req_live[idx] = (uint16_t)(1u | (req_posted(r) ? 32u : 0u) |
                                          ((r->flags & RF_ON_TXQ) ? 64u : 0u) |
                                          ((r->flags & RF_ON_CQ) ? 128u : 0u) |
                                          ((r->flags & RF_ON_RDMAQ) ? 256u : 0u));
            s->req_nout[idx] = r->nout;
            s->req_stamp[idx] = r->stamp;
            s->nposted += req_posted(r);
            s->ntxq += (r->flags & RF_ON_TXQ) != 0;
            s->ncq += (r->flags & RF_ON_CQ) != 0;
            s->nrdma += (r->flags & RF_ON_RDMAQ) != 0;
            s->fin_owed += (r->flags & RF_FIN_OWED) != 0;
            s->bs_blocks += boff != SNAP_NONE;
            check_arb_req(s, r);
            if ((req_posted(r) && (r->flags & (RF_ON_TXQ | RF_ON_RDMAQ))) ||
                (r->flags & (RF_ON_TXQ | RF_ON_RDMAQ)) == (RF_ON_TXQ | RF_ON_RDMAQ))
                corrupt(s); /* one link, one list */
            continue;
        }
        quay_req *d = &e->reqs[idx];
        uint32_t id = d->id;
        *d = tmp;
        d->id = id;
        ql_init(&d->link);
        ql_init(&d->clink);
        d->comm = ci == SNAP_NONE ? NULL : &e->comms[ci];
        if (d->comm != NULL)
            d->comm->nreqs++;
        if (d->flags & RF_FIN_OWED)
            e->ctrl_reserved++;
        d->bsend_block = boff == SNAP_NONE ? NULL : e->bs.buf + boff;
        e->reqs_used++;
    }
    if (s->mode == SNAP_CHECK && s->bs_blocks != s->bs_nused)
        corrupt(s);

    /* Lists, in order. */
    quay_req **order = NULL;
    uint32_t cnt[4] = {0, 0, 0, 0};
    if (s->mode == SNAP_SAVE && e->reqs_used != 0) {
        order = qalloc(e, (size_t)e->reqs_used * sizeof *order);
        if (order == NULL) {
            s->err = QUAY_ENOMEM;
            return;
        }
    }
    for (int which = 0; which < 4; which++) {
        if (s->mode == SNAP_SAVE) {
            uint32_t m = 0;
            if (which == 0) {
                for (uint32_t i = 0; i < e->nreqs; i++)
                    if (req_posted(&e->reqs[i]))
                        order[m++] = &e->reqs[i];
                if (m > 1)
                    qsort(order, m, sizeof *order, cmp_stamp);
            } else {
                qlink *h = which == 1 ? &e->txq : which == 2 ? &e->cq : &e->rdmaq;
                for (qlink *l = ql_first(h); l != NULL; l = ql_next(h, l))
                    order[m++] = which != 2 ? QUAY_CONTAINER_OF(l, quay_req, link)
                                            : QUAY_CONTAINER_OF(l, quay_req, clink);
            }
            cnt[which] = m;
        }
        sx_req_list(s, which, order, cnt[which]);
    }
    qfree(e, order);
}

/* ---- messages --------------------------------------------------------------------- */

/* Lists a message can be saved in (its record's place says which). */
enum { ML_UNEXP, ML_ORPHAN, ML_TAKEN, ML_HELD };

static const uint8_t ml_where[4] = {UM_UNEXP, UM_ORPHAN, UM_TAKEN, UM_HELD};

/* One message. `peer` is the held list's peer (ML_HELD), `prev_seq` the
 * previous held seq there (NULL for the first). */
static void sx_msg(snap *s, int list, umsg *src, int32_t peer, uint32_t *prev_seq)
{
    quay_engine *e = s->e;
    umsg tmp, *m = &tmp;
    memset(&tmp, 0, sizeof tmp);
    uint32_t idx = 0, ci = SNAP_NONE;
    uint8_t has_data = 0;
    if (s->mode == SNAP_SAVE) {
        m = src;
        idx = (uint32_t)(m - e->msgs);
        ci = m->comm ? (uint32_t)(m->comm - e->comms) : SNAP_NONE;
        has_data = m->data != NULL;
    }
    sx_u32(s, &idx);
    sx_u8(s, &m->type);
    sx_u8(s, &m->flags);
    sx_i32(s, &m->peer);
    sx_u32(s, &m->ctx);
    sx_i32(s, &m->src);
    sx_i32(s, &m->tag);
    sx_u32(s, &m->seq);
    sx_u32(s, &m->sreq);
    sx_u32(s, &m->target);
    sx_u64(s, &m->len);
    sx_u64(s, &m->key);
    sx_u32(s, &m->rreq);
    sx_u32(s, &m->x);
    sx_i32(s, &m->status);
    sx_u8(s, &m->rflags);
    sx_u32(s, &m->slot);
    sx_u32(s, &ci);
    sx_u8(s, &has_data);
    if (s->mode == SNAP_SAVE) {
        if (has_data)
            raw(s, m->data, (size_t)m->len);
        return;
    }
    /* Checked in both load modes (APPLY reads the payload only if sane). */
    int eager_data = m->type == QUAY_PKT_EAGER && m->len != 0 && !(m->flags & UMF_POISON);
    int need_comm = list == ML_UNEXP || list == ML_TAKEN;
    if (s->err != 0 || idx >= e->nmsgs ||
        (m->type != QUAY_PKT_EAGER && m->type != QUAY_PKT_RTS &&
         m->type != QUAY_PKT_CANCEL_REQ &&
         (m->type < QUAY_PKT_RTR || m->type > QUAY_PKT_DISABLE_ANY)) ||
        /* receiver-initiated and arbitration packets wait only for their
         * turn */
        (m->type >= QUAY_PKT_RTR && list != ML_HELD) ||
        (m->rflags & ~(uint32_t)(WIRE_F_REVOKE | WIRE_F_CANCEL)) ||
        (m->flags & ~UMF_ALL) || m->peer < 0 || m->peer >= e->nranks ||
        ((m->flags & (UMF_KEY | UMF_PUT_OK)) && m->type != QUAY_PKT_RTS) ||
        (!(m->flags & UMF_KEY) && m->type != QUAY_PKT_RTR && m->type != QUAY_PKT_RTR_ANY &&
         m->key != 0) ||
        ((m->flags & UMF_CREDIT) && (e->flow != QUAY_FLOW_CREDIT || m->peer == e->rank)) ||
        has_data > 1 || has_data != eager_data ||
        (has_data && m->len > e->cfg.unexpected_bytes_max - s->ubytes) ||
        (need_comm ? bad_index(ci, e->ncomms_max, 0) : ci != SNAP_NONE) ||
        (list == ML_HELD && m->peer != peer)) {
        corrupt(s);
        return;
    }
    if (list == ML_HELD) {
        /* Held runs are sorted and ahead of the next expected seq. */
        if (fc_seq_le(m->seq, *prev_seq))
            corrupt(s);
        *prev_seq = m->seq;
    }
    s->ubytes += has_data ? m->len : 0;
    if (s->mode == SNAP_CHECK) {
        s->credit_held[m->peer] += (m->flags & UMF_CREDIT) != 0;
        if (need_comm && (!s->comm_live[ci] || s->comm_ctx[ci] != m->ctx ||
                          m->src < 0 || m->src >= s->comm_size[ci]))
            corrupt(s);
        if (s->msg_live[idx])
            corrupt(s);
        s->msg_live[idx] = 1;
        if (has_data)
            skip(s, m->len);
        return;
    }
    umsg *d = &e->msgs[idx];
    *d = tmp;
    ql_init(&d->blink);
    ql_init(&d->alink);
    ql_init(&d->slink);
    ql_init(&d->tlink);
    d->data = NULL;
    d->pooled = 0;
    d->comm = NULL;
    if (has_data) {
        d->data = qalloc(e, (size_t)m->len);
        if (d->data == NULL) {
            s->err = QUAY_ENOMEM;
            d->where = UM_FREE;
            return;
        }
        raw(s, d->data, (size_t)m->len);
        e->ubytes += (size_t)m->len;
    }
    e->msgs_used++;
    if (d->flags & UMF_CREDIT)
        e->peers[d->peer].credit_held++;
    switch (list) {
    case ML_UNEXP:
        match_add_unexp(e, &e->comms[ci], d);
        break;
    case ML_ORPHAN:
        d->where = UM_ORPHAN;
        ql_push_tail(&e->orphans, &d->alink);
        e->norphans++;
        break;
    case ML_TAKEN:
        d->where = UM_TAKEN;
        d->comm = &e->comms[ci];
        d->comm->nreqs++; /* a taken message keeps its communicator */
        break;
    default: {
        peer_state *ps = &e->peers[peer];
        d->where = UM_HELD;
        ql_push_tail(&ps->held, &d->blink);
        ps->nheld++;
        e->held_total++;
        e->held_bytes += d->type == QUAY_PKT_EAGER ? (size_t)d->len : 0;
    }
    }
}

static void sx_msgs(snap *s)
{
    quay_engine *e = s->e;
    for (int list = ML_UNEXP; list <= ML_TAKEN; list++) {
        uint32_t n = 0;
        if (s->mode == SNAP_SAVE)
            for (uint32_t i = 0; i < e->nmsgs; i++)
                n += e->msgs[i].where == ml_where[list];
        n = sx_count(s, n, e->nmsgs);
        if (s->mode != SNAP_SAVE) {
            for (uint32_t k = 0; k < n && s->err == 0; k++)
                sx_msg(s, list, NULL, -1, NULL);
            continue;
        }
        if (list == ML_UNEXP) { /* per communicator, in arrival order */
            for (uint32_t c = 0; c < e->ncomms_max; c++) {
                if (!e->comms[c].in_use)
                    continue;
                if (!e->m.use_fast) { /* the oracle matches: its list */
                    umsg *m;
                    for (uint32_t i = 0; (m = oracle_unexp_at(e->m.oracle, i)) != NULL; i++)
                        if (m->comm == &e->comms[c])
                            sx_msg(s, list, m, -1, NULL);
                    continue;
                }
                qlink *h = &e->comms[c].unexp_all;
                for (qlink *l = ql_first(h); l != NULL; l = ql_next(h, l))
                    sx_msg(s, list, QUAY_CONTAINER_OF(l, umsg, alink), -1, NULL);
            }
        } else if (list == ML_ORPHAN) {
            for (qlink *l = ql_first(&e->orphans); l != NULL; l = ql_next(&e->orphans, l))
                sx_msg(s, list, QUAY_CONTAINER_OF(l, umsg, alink), -1, NULL);
        } else {
            for (uint32_t i = 0; i < e->nmsgs; i++)
                if (e->msgs[i].where == UM_TAKEN)
                    sx_msg(s, list, &e->msgs[i], -1, NULL);
        }
    }
}

/* ---- peers: sequencing, flow control, held messages, queued packets ------------------ */

static void sx_fc(snap *s, fc_tx *t, fc_rx *r)
{
    sx_u32(s, &t->next);
    sx_u32(s, &t->una);
    sx_u32(s, &t->resend);
    sx_u32(s, &t->retries);
    sx_u32(s, &t->stuck);
    sx_u64(s, &t->rto);
    sx_u64(s, &t->rto_base);
    sx_u64(s, &t->srtt);
    sx_u64(s, &t->rttvar);
    sx_u8(s, &t->has_rtt);
    sx_u8(s, &t->backed_off);
    sx_u64(s, &t->deadline);
    sx_u8(s, &t->state);
    sx_u8(s, &t->failed);
    sx_u32(s, &r->expected);
    sx_u32(s, &r->refused);
    sx_u8(s, &r->state);
    sx_u8(s, &r->ack_owed);
    sx_u8(s, &r->nack_owed);
}

static void sx_peer_scalars(snap *s, peer_state *ps)
{
    sx_u32(s, &ps->tx_seq);
    sx_u32(s, &ps->rx_seq);
    sx_u8(s, &ps->drain_blocked);
    sx_u8(s, &ps->failed);
    sx_fc(s, &ps->tx, &ps->rx);
    sx_u64(s, &ps->hold_until);
    sx_u32(s, &ps->nack_seq);
    sx_u32(s, &ps->nack_repeats);
    sx_u32(s, &ps->gap_seq);
    sx_u8(s, &ps->gap_nacked);
    sx_u8(s, &ps->gap_nack_owed);
    sx_u32(s, &ps->credit_limit);
    sx_u32(s, &ps->credit_sent);
    sx_u8(s, &ps->peer_blocked);
    sx_u8(s, &ps->probe_due);
    sx_u32(s, &ps->probes);
    sx_u8(s, &ps->heard);
    sx_u8(s, &ps->ping_owed);
    sx_u8(s, &ps->ka_wanted);
    sx_u64(s, &ps->probe_at);
    sx_u64(s, &ps->probe_rto);
}

static int peer_scalars_ok(const snap *s, const peer_state *ps)
{
    const fc_params *p = &s->e->fcp;
    const fc_tx *t = &ps->tx;
    /* Stable when saved: nothing unacknowledged, no timer running (a
     * failed peer's abandoned packets aside: nothing waits for them). */
    return (ps->failed ||
            (t->una == t->next && t->resend == t->next && t->deadline == UINT64_MAX)) &&
           t->state <= 1 && t->failed <= 1 && t->has_rtt <= 1 && t->backed_off <= 1 &&
           t->rto >= p->rto_init_ns && t->rto <= p->rto_max_ns &&
           t->rto_base >= p->rto_init_ns && t->rto_base <= p->rto_max_ns &&
           ps->rx.state <= 1 && ps->rx.ack_owed <= 1 && ps->rx.nack_owed <= 1 &&
           ps->drain_blocked <= 1 && ps->failed <= 1 && ps->gap_nacked <= 1 &&
           ps->gap_nack_owed <= 1 && ps->peer_blocked <= 1 && ps->probe_due <= 1 &&
           ps->heard <= 1 && ps->ping_owed <= 1 && ps->ka_wanted <= 1 &&
           ps->probe_rto >= p->rto_init_ns && ps->probe_rto <= p->rto_max_ns;
}

/* A packet built but not yet given a sequence number (quiesce held it). */
static void sx_out(snap *s, qout *src, int32_t peer, uint32_t *room)
{
    quay_engine *e = s->e;
    qout tmp, *o = &tmp;
    memset(&tmp, 0, sizeof tmp);
    uint32_t ri = SNAP_NONE;
    if (s->mode == SNAP_SAVE) {
        o = src;
        ri = req_index(e, o->req);
    }
    sx_u8(s, &o->pkt);
    sx_u16(s, &o->hdr_len);
    sx_u32(s, &ri);
    SX_PTR(s, o->payload, const void *);
    sx_size(s, &o->payload_len);
    sx_u32(s, &o->seq);
    if (o->hdr_len > QUAY_MAX_HEADER) {
        corrupt(s);
        return;
    }
    raw(s, OUT_HDR(o), o->hdr_len);
    if (s->mode == SNAP_SAVE)
        return;
    if (s->err != 0 || o->pkt < QUAY_PKT_EAGER || o->pkt > QUAY_PKT_DISABLE_ANY ||
        o->hdr_len == 0 || bad_index(ri, e->nreqs, 1) ||
        o->payload_len > e->cfg.max_packet - o->hdr_len ||
        (ri == SNAP_NONE && o->payload_len != 0) || *room == 0) {
        corrupt(s);
        return;
    }
    (*room)--;
    if (s->mode == SNAP_CHECK) {
        if (ri != SNAP_NONE) {
            if (!(s->req_live[ri] & 1) || s->req_nout[ri] == 0)
                corrupt(s);
            else
                s->req_nout[ri]--;
        }
        return;
    }
    qout *d = out_alloc(e);
    d->pkt = o->pkt;
    d->hdr_len = o->hdr_len;
    d->peer = peer;
    d->req = ri == SNAP_NONE ? NULL : &e->reqs[ri];
    d->payload = o->payload;
    d->payload_len = o->payload_len;
    d->seq = o->seq;
    d->framed = 1; /* as chan_submit left it */
    memcpy(OUT_HDR(d), OUT_HDR(o), o->hdr_len);
    peer_state *ps = &e->peers[peer];
    if (ps->pend_tail != NULL)
        ps->pend_tail->next = d;
    else
        ps->pend_head = d;
    ps->pend_tail = d;
}

static uint64_t rebase(uint64_t t, uint64_t delta, uint64_t off)
{
    return t == off ? off : t + delta;
}

static void sx_peers(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, (uint32_t)e->nranks, (uint32_t)e->nranks);
    if (n != (uint32_t)e->nranks)
        corrupt(s);
    /* APPLY: sx_engine moved the clock to at least the saved time. */
    uint64_t delta = e->now > s->saved_now ? e->now - s->saved_now : 0;
    uint32_t room = e->nouts - e->outs_reserved;
    for (int32_t p = 0; p < e->nranks && s->err == 0; p++) {
        peer_state tmp, *ps = &tmp;
        memset(&tmp, 0, sizeof tmp);
        if (s->mode == SNAP_SAVE)
            ps = &e->peers[p];
        sx_peer_scalars(s, ps);
        if (s->mode != SNAP_SAVE && (s->err != 0 || !peer_scalars_ok(s, ps))) {
            corrupt(s);
            return;
        }
        if (s->mode == SNAP_APPLY) {
            peer_state *d = &e->peers[p];
            uint32_t credit_held = d->credit_held; /* messages restored so far */
            *d = tmp;
            ql_init(&d->held);
            d->nheld = 0;
            d->credit_held = credit_held;
            d->pend_head = d->pend_tail = NULL;
            d->unack_head = d->unack_tail = NULL;
            d->hold_until = rebase(tmp.hold_until, delta, 0);
            d->probe_at = rebase(tmp.probe_at, delta, 0);
            d->tx.deadline = rebase(tmp.tx.deadline, delta, UINT64_MAX);
            if (d->drain_blocked)
                e->ndrain_blocked++;
            if (d->failed)
                e->nfailed++;
        }
        /* held messages, sorted by seq, all ahead of rx_seq */
        uint32_t nh = 0;
        if (s->mode == SNAP_SAVE)
            nh = ps->nheld;
        nh = sx_count(s, nh, e->nmsgs);
        uint32_t prev = ps->rx_seq;
        if (s->mode == SNAP_SAVE) {
            for (qlink *l = ql_first(&ps->held); l != NULL; l = ql_next(&ps->held, l))
                sx_msg(s, ML_HELD, QUAY_CONTAINER_OF(l, umsg, blink), p, &prev);
        } else {
            prev = tmp.rx_seq - 1u;
            for (uint32_t k = 0; k < nh && s->err == 0; k++)
                sx_msg(s, ML_HELD, NULL, p, &prev);
        }
        /* Saved stable: nothing owed to the peer (with the credit its
         * messages hold, now all counted). */
        if (s->mode == SNAP_CHECK) {
            tmp.credit_held = s->credit_held[p];
            if (p != e->rank && !tmp.failed && chan_peer_owes(e, &tmp))
                corrupt(s);
        }
        /* packets queued for a sequence number */
        uint32_t no = 0;
        if (s->mode == SNAP_SAVE)
            for (qout *o = ps->pend_head; o != NULL; o = o->next)
                no++;
        no = sx_count(s, no, e->nouts);
        if (s->mode == SNAP_SAVE) {
            for (qout *o = ps->pend_head; o != NULL; o = o->next)
                sx_out(s, o, p, &room);
        } else {
            for (uint32_t k = 0; k < no && s->err == 0; k++)
                sx_out(s, NULL, p, &room);
        }
    }
}

/* ---- control replies -------------------------------------------------------------- */

static void sx_ctrl(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, e->ctrl_count, e->ctrl_cap);
    if (s->mode == SNAP_CHECK &&
        (n + s->fin_owed > e->ctrl_cap || s->fin_owed > e->ctrl_cap / 2))
        corrupt(s); /* the reserved slots must still fit */
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        ctrl_item it = {0, 0, 0, 0, 0, 0};
        if (s->mode == SNAP_SAVE)
            it = e->ctrl[(e->ctrl_head + k) & e->ctrl_mask];
        sx_u8(s, &it.pkt);
        sx_i32(s, &it.peer);
        sx_u32(s, &it.sreq);
        sx_i32(s, &it.status);
        sx_u32(s, &it.rreq);
        sx_u8(s, &it.flags);
        if (s->mode == SNAP_SAVE)
            continue;
        if (it.flags != 0 && (it.flags != WIRE_F_FOR_RECV || it.pkt != QUAY_PKT_CANCEL_REP))
            corrupt(s);
        if ((it.pkt != QUAY_PKT_ACK && it.pkt != QUAY_PKT_CANCEL_REP &&
             it.pkt != QUAY_PKT_FIN) ||
            it.peer < 0 || it.peer >= e->nranks)
            corrupt(s);
        else if (s->mode == SNAP_APPLY) {
            ctrl_push(e, it.pkt, it.peer, it.sreq, it.status, it.rreq)->flags = it.flags;
        }
    }
}

/* ---- receiver-initiated state (rtr.c) ------------------------------------------------- */

static void sx_rtr_ent(snap *s, rtr_ent *t)
{
    sx_u32(s, &t->ctx);
    sx_i32(s, &t->src);
    sx_i32(s, &t->tag);
    sx_u32(s, &t->rreq);
    sx_u32(s, &t->x);
    sx_u8(s, &t->live);
    sx_u8(s, &t->any);
    sx_u64(s, &t->cap);
    sx_u64(s, &t->key);
    if (s->mode != SNAP_SAVE && (t->src < 0 || t->tag < QUAY_ANY_TAG || t->rreq == 0 ||
                                 t->live > 1 || t->any > 1 ||
                                 (t->any && (s->e->aslots == NULL || !t->live || t->cap != 0 ||
                                             t->key != 0 || ANY_IDX(t->rreq) >= 255u))))
        corrupt(s);
}

/* Arbitration: the announced patterns and who holds them. Flags and
 * queued sends are request states: rebuilt from the requests. */
static void sx_arb(snap *s)
{
    quay_engine *e = s->e;
    if (e->aslots == NULL || s->err != 0)
        return;
    int apply = s->mode == SNAP_APPLY;
    uint32_t nw = e->any_words;
    for (uint32_t i = 0; i < e->cfg.any_slots && s->err == 0; i++) {
        any_slot t = e->aslots[i];
        sx_u32(s, &t.ctx);
        sx_i32(s, &t.tag);
        sx_i32(s, &t.src);
        sx_u32(s, &t.gen);
        sx_u32(s, &t.npending);
        sx_u64(s, &t.used);
        sx_u8(s, &t.in_use);
        for (uint32_t w = 0; w < nw; w++) {
            uint64_t b = e->aslot_bits[(size_t)i * nw + w];
            sx_u64(s, &b);
            if (s->mode != SNAP_SAVE && w == nw - 1 && (e->nranks & 63) != 0 &&
                (b >> (e->nranks & 63)) != 0)
                corrupt(s); /* bits past the last rank */
            if (apply)
                e->aslot_bits[(size_t)i * nw + w] = b;
        }
        if (s->mode == SNAP_SAVE)
            continue;
        /* The receives that use a slot say how many it has. */
        if (t.in_use > SLOT_STALE || t.gen > 0xFFFFFFu || t.src < 0 || t.tag < QUAY_ANY_TAG ||
            (t.in_use != SLOT_LIVE && t.npending != 0) ||
            (s->mode == SNAP_CHECK && s->slot_users[i] != t.npending))
            corrupt(s);
        else if (apply)
            e->aslots[i] = t;
    }
    if (s->mode == SNAP_CHECK) {
        /* A peer's queued sends wait behind its flagged one. */
        for (int32_t p = 0; p < e->nranks && s->err == 0; p++)
            if (s->peer_arb[p] == ARB_QUEUED)
                corrupt(s);
        return;
    }
    if (!apply || s->err != 0)
        return;
    /* Per peer: its send whose flag is out, its queued sends in order. */
    quay_req **order = NULL;
    uint32_t nq = 0;
    for (uint32_t k = 0; k < e->nreqs; k++)
        nq += e->reqs[k].state == QUAY_RS_SEND_QUEUED;
    if (nq != 0 && (order = qalloc(e, (size_t)nq * sizeof *order)) == NULL) {
        s->err = QUAY_ENOMEM;
        return;
    }
    nq = 0;
    for (uint32_t k = 0; k < e->nreqs; k++) {
        quay_req *r = &e->reqs[k];
        if (r->state == QUAY_RS_SEND_QUEUED) {
            order[nq++] = r;
        } else if (r->state == QUAY_RS_SEND_ANY) {
            e->peers[r->peer].any_send = r; /* one per peer: checked */
        }
    }
    if (nq > 1)
        qsort(order, nq, sizeof *order, cmp_stamp);
    for (uint32_t k = 0; k < nq; k++) {
        ql_push_tail(&e->peers[order[k]->peer].any_waitq, &order[k]->link);
    }
    qfree(e, order);
}

static void sx_rtr(snap *s)
{
    quay_engine *e = s->e;
    if (e->rtr_pool == NULL)
        return; /* the identity says whether the blob has any */
    int apply = s->mode == SNAP_APPLY;
    if (apply)
        rtr_attach(e); /* the peers' scalars were rewritten: re-point, empty */
    /* Queued work, in order. */
    uint32_t n = sx_count(s, e->rtrq_count, e->rtrq_cap);
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        rtr_item it;
        memset(&it, 0, sizeof it);
        if (s->mode == SNAP_SAVE)
            it = e->rtrq[(e->rtrq_head + k) % e->rtrq_cap];
        sx_u8(s, &it.pkt);
        sx_u8(s, &it.flags);
        sx_i32(s, &it.peer);
        sx_u32(s, &it.rreq);
        sx_u32(s, &it.sreq);
        sx_u32(s, &it.slot);
        sx_u32(s, &it.ctx);
        sx_i32(s, &it.src);
        sx_i32(s, &it.tag);
        sx_u64(s, &it.cap);
        sx_u64(s, &it.key);
        if (s->mode == SNAP_SAVE)
            continue;
        /* What the item will encode must be a packet wire_decode admits
         * (an RTR's fields carry nothing of arbitration). */
        int bad = it.peer < 0 || it.peer >= e->nranks || it.peer == e->rank;
        if (it.pkt == QUAY_PKT_RTR) {
            bad |= it.sreq != 0 || it.slot != 0;
        } else if (it.pkt < QUAY_PKT_ENA_ANY || it.pkt > QUAY_PKT_DISABLE_ANY ||
                   it.pkt == QUAY_PKT_ANY_FLAG || e->aslots == NULL) {
            bad = 1;
        }
        if (!bad) {
            wire_hdr h;
            uint8_t buf[QUAY_MAX_HEADER];
            memset(&h, 0, sizeof h);
            rtr_item_hdr(&it, &h);
            size_t hl = wire_encode(&h, buf);
            bad = wire_decode(buf, hl, &h) < 0;
        }
        if (bad)
            corrupt(s);
        else if (apply) {
            e->rtrq[(e->rtrq_head + e->rtrq_count++) % e->rtrq_cap] = it;
            if (rtr_item_answers_flag(&it))
                e->peers[it.peer].flag_answer = 1;
        }
    }
    /* Per peer: its RTRs to us, our log of envelopes to it, our RTRs it
     * may hold. */
    for (int32_t p = 0; p < e->nranks && s->err == 0; p++) {
        peer_state *ps = &e->peers[p];
        uint32_t nr = sx_count(s, ps->nrtr, e->cfg.rtr_per_peer);
        for (uint32_t k = 0; k < nr && s->err == 0; k++) {
            rtr_ent t;
            memset(&t, 0, sizeof t);
            if (s->mode == SNAP_SAVE)
                t = ps->rtr[k];
            sx_rtr_ent(s, &t);
            if (apply)
                ps->rtr[ps->nrtr++] = t;
        }
        uint32_t nl = sx_count(s, ps->rlog_count, RTR_LOG);
        for (uint32_t k = 0; k < nl && s->err == 0; k++) {
            rtr_logent l = {0, 0, 0};
            if (s->mode == SNAP_SAVE)
                l = ps->rlog[(ps->rlog_head + k) % RTR_LOG];
            sx_u32(s, &l.seq);
            sx_u32(s, &l.ctx);
            sx_i32(s, &l.tag);
            if (apply)
                ps->rlog[(ps->rlog_head + ps->rlog_count++) % RTR_LOG] = l;
        }
        uint32_t lost = ps->rlog_lost, out = ps->rtr_out, unsent = ps->tx_unsent;
        sx_u32(s, &lost);
        sx_u32(s, &out);
        sx_u32(s, &unsent);
        if (apply)
            ps->tx_unsent = unsent;
        if (out > e->cfg.rtr_per_peer)
            corrupt(s);
        if (apply) {
            ps->rlog_lost = lost;
            ps->rtr_out = out;
        }
    }
    sx_arb(s);
}

/* ---- the whole blob ------------------------------------------------------------------ */

static void walk(snap *s)
{
    /* (regions after communicators: a region may be scoped to one) */
    static const uint32_t tags[10] = {SEC_IDENT, SEC_ENGINE,  SEC_REQIDS,
                                      SEC_COMMS, SEC_REGIONS, SEC_REQS,
                                      SEC_MSGS,  SEC_PEERS,   SEC_CTRL, SEC_RTR};
    static void (*const fns[10])(snap *) = {sx_ident, sx_engine, sx_reqids,
                                            sx_comms, sx_regions, sx_reqs,
                                            sx_msgs, sx_peers, sx_ctrl, sx_rtr};
    for (int i = 0; i < 10 && s->err == 0; i++) {
        size_t outer;
        size_t at = sec_begin(s, tags[i], &outer);
        if (s->err == 0)
            fns[i](s);
        sec_end(s, at, outer);
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
    memset(&s, 0, sizeof s);
    s.mode = SNAP_SAVE;
    s.e = (quay_engine *)e; /* SAVE mode only reads it */
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
        for (qout *o = e->peers[p].pend_head; o != NULL; o = o->next)
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
    memset(&s, 0, sizeof s);
    s.mode = SNAP_CHECK;
    s.e = e;
    s.in = b;
    s.end = len - 4;
    s.pos = SNAP_HDR_LEN;
    int rc = snap_scratch(&s);
    if (rc == 0) {
        walk(&s);
        if (s.err == 0 && s.pos != s.end)
            corrupt(&s);
        for (uint32_t i = 0; s.err == 0 && i < e->nreqs; i++)
            if ((s.req_live[i] & 1) && s.req_nout[i] != 0)
                corrupt(&s); /* nout counts exactly its queued packets */
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
    memset(&s, 0, sizeof s);
    s.mode = SNAP_APPLY;
    s.e = e;
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
