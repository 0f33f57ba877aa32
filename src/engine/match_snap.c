/*
 * match_snap.c — the context blob's MSGS section (snap.h): unexpected
 * messages per communicator in arrival order, orphans, taken messages
 * (slot, envelope, payload copy); and the record of one held message,
 * which PEER writes in each peer's held run.
 */
#include "engine/snap.h"

#include "engine/match_oracle.h"

/* 1 if a is b or comes before it in sequence space (wrap-safe). */
static int seq_le(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) <= 0;
}

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
            snap_raw(s, m->data, (size_t)m->len);
        return;
    }
    /* Checked in both load modes (APPLY reads the payload only if sane). */
    int eager_data = m->type == QUAY_PKT_EAGER && m->len != 0 && !(m->flags & UMF_POISON);
    int need_comm = list == ML_UNEXP || list == ML_TAKEN;
    /* what its type allows (packets.h): a sequenced type; one that is
     * not an envelope waits only for its turn; the offers only where its
     * flags may carry them; a key only with one or where it has one */
    const pkt_type *t = pkt_info(m->type);
    if (s->err != 0 || idx >= e->nmsgs || !pkt_is(m->type, PK_SEQ) ||
        (!(t->props & PK_MATCH) && list != ML_HELD) ||
        (m->rflags & ~(uint32_t)(WIRE_F_REVOKE | WIRE_F_CANCEL)) ||
        (m->flags & ~UMF_ALL) || m->peer < 0 || m->peer >= e->nranks ||
        ((m->flags & UMF_KEY) && !(t->flags & WIRE_F_KEY)) ||
        ((m->flags & UMF_PUT_OK) && !(t->flags & WIRE_F_PUT_OK)) ||
        (!(m->flags & UMF_KEY) && !(t->props & PK_KEY) && m->key != 0) ||
        ((m->flags & UMF_CREDIT) && (!peer_counts_credit(e) || m->peer == e->rank)) ||
        has_data > 1 || has_data != eager_data ||
        (has_data && m->len > e->cfg.unexpected_bytes_max - s->ubytes) ||
        (need_comm ? snap_bad_index(ci, e->ncomms_max, 0) : ci != SNAP_NONE) ||
        (list == ML_HELD && m->peer != peer)) {
        snap_corrupt(s);
        return;
    }
    if (list == ML_HELD) {
        /* Held runs are sorted and ahead of the next expected seq. */
        if (seq_le(m->seq, *prev_seq))
            snap_corrupt(s);
        *prev_seq = m->seq;
    }
    s->ubytes += has_data ? m->len : 0;
    if (s->mode == SNAP_CHECK) {
        s->credit_held[m->peer] += (m->flags & UMF_CREDIT) != 0;
        if (need_comm && (!s->comm_live[ci] || s->comm_ctx[ci] != m->ctx ||
                          m->src < 0 || m->src >= s->comm_size[ci]))
            snap_corrupt(s);
        if (s->msg_live[idx])
            snap_corrupt(s);
        s->msg_live[idx] = 1;
        if (has_data)
            snap_skip(s, m->len);
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
        snap_raw(s, d->data, (size_t)m->len);
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

void snap_held_msg(snap *s, umsg *src, int32_t peer, uint32_t *prev_seq)
{
    sx_msg(s, ML_HELD, src, peer, prev_seq);
}

void snap_msgs(snap *s)
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
