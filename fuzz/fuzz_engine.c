/*
 * fuzz_engine.c — one engine fed an input-driven sequence of API calls and
 * arbitrary packets from fake peers (fuzz_engine.h has the input
 * language, fuzz/README.md examples).
 *
 * The fake peers are a thin, deliberately unreliable model: they send
 * envelopes with the next sequence number or a wrong one, answer what the
 * engine sent them (CTS for an RTS, DATA for a CTS, ACK, FIN, SC after
 * writing through the engine's key, arbitration replies ...), echo its
 * envelopes back, replay earlier packets, forge any header wire_encode can
 * write (fields from the input or harvested from the engine's packets:
 * request ids, sequence numbers, keys), send raw bytes, and under flow
 * control frame everything with a valid CRC, acknowledge, refuse and
 * retransmit. Invariants (abort on violation):
 *   - every call returns one of the codes quay.h documents for it; never
 *     QUAY_EINTERNAL (the oracle matcher runs in lockstep) and never a
 *     fatal code unless an allocation was made to fail;
 *   - every packet the engine emits decodes (wire_decode) and, under flow
 *     control, carries a valid frame with a correct CRC32C for the
 *     channel's current key; actions name valid peers and sizes;
 *   - a request completes at most once: at most one COMPLETE action, only
 *     for a request the harness holds and has not freed, and
 *     quay_req_test agrees; a receive's count never exceeds its capacity
 *     and no byte past the capacity is written (16 guard bytes; exact
 *     heap blocks elsewhere for ASan);
 *   - the trace is consistent: each STATE event starts from the state the
 *     previous one for that request ended in, and DONE is entered once;
 *   - bounds: requests, descriptors, unexpected bytes, out slots and
 *     communicators stay within the configuration; memory peaks within
 *     the creation footprint + 2 x unexpected_bytes_max + 512 KiB, and
 *     nothing is left after quay_engine_free;
 *   - a context saved and restored (or saved, reset and restored) saves
 *     to the same bytes again, and the engine's own blob is never refused
 *     as damaged or foreign;
 *   - a packet answered with QUAY_EPROTO or QUAY_ESTATE leaves every
 *     channel's state as it was: what a saved context would hold
 *     (snapshot_state) is the same bytes before and after the call.
 */
#include "fe.h"

int fe_verbose;

/* A call answered rc: check it against the documented codes. */
void fe_check_rc(fe *f, const char *call, int rc, const int *allowed)
{
    if (fe_verbose && rc != 0)
        fprintf(stderr, "  %s: %s\n", call, quay_strerror(rc));
    if (rc == 0 || fz_code_in(rc, allowed))
        return;
    if (rc == QUAY_ENOMEM && f->fail_armed) {
        f->dead = 1;
        return;
    }
    fz_fail("%s returned %d (%s)", call, rc, quay_strerror(rc));
}

/* The CRC of frame b[0..n) (its CRC field zero) on channel ch from `from`
 * to `to` (docs/wire.md, "Frame CRC"). */
uint32_t fe_frame_crc(const fe *f, int ch, int32_t from, int32_t to, const uint8_t *b, size_t n)
{
    uint8_t ends[8];
    size_t ne = 4;
    if (f->n <= 65536) {
        wire_put32(ends, (uint32_t)from | (uint32_t)to << 16);
    } else {
        wire_put32(ends, (uint32_t)from);
        wire_put32(ends + 4, (uint32_t)to);
        ne = 8;
    }
    return crc32c_update(f->crc, crc32c_update(f->crc, f->key[ch], ends, ne), b, n);
}

/* ---- memory the engine may read or write until the end ------------------- */

uint8_t *fe_keep_alloc(fe *f, size_t n, int guard)
{
    uint8_t *b;
    if (f->nkeep == FE_MAX_KEEP)
        return NULL;
    b = malloc(n + (guard ? FE_GUARD : 0) + 1);
    if (b == NULL)
        fz_fail("out of memory");
    memset(b, FE_FILL, n + (guard ? FE_GUARD : 0) + 1);
    f->keep[f->nkeep] = b;
    f->keep_len[f->nkeep] = n;
    f->keep_guard[f->nkeep] = (uint8_t)guard;
    f->nkeep++;
    return b;
}

void fe_pattern(uint8_t *b, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

/* ---- harvest: ids and keys the engine put on the wire ------------------- */

static void add_id(fe *f, uint32_t v)
{
    if (v == 0)
        return;
    f->ids[f->idpos] = v;
    f->idpos = (f->idpos + 1) % FE_MAX_IDS;
    if (f->nids < FE_MAX_IDS)
        f->nids++;
}

void fe_add_key(fe *f, uint64_t k)
{
    if (k == 0)
        return;
    f->keys[f->keypos] = k;
    f->keypos = (f->keypos + 1) % FE_MAX_KEYS;
    if (f->nkeys < FE_MAX_KEYS)
        f->nkeys++;
}

uint32_t fe_pick32(fe *f, fz_in *in)
{
    uint8_t s = fz_u8(in);
    if (s < 0x40)
        return s;
    if (s < 0x80)
        return f->nids ? f->ids[(s & 0x3f) % f->nids] : 0;
    if (s < 0xC0)
        return (uint32_t)-(int32_t)(s & 0x3f);
    return fz_u32(in);
}

uint64_t fe_pick64(fe *f, fz_in *in)
{
    uint8_t s = fz_u8(in);
    if (s < 0x40)
        return s;
    if (s < 0x80)
        return f->nkeys ? f->keys[(s & 0x3f) % f->nkeys] : 0;
    if (s < 0xC0)
        return (uint64_t)(s & 0x3f) * 64u;
    return fz_u64(in);
}

/* ---- trace ---------------------------------------------------------------- */

static void on_trace(void *ctx, const quay_trace_event *ev)
{
    fe_trace *t = ctx;
    if (fe_verbose)
        fprintf(stderr, "  trace: kind %d req %#x %s -> %s peer %d pkt %s code %d seq %u\n",
                ev->kind, ev->req_id, quay_state_name(ev->from), quay_state_name(ev->to),
                ev->peer, quay_pkt_name(ev->pkt), ev->code, ev->seq);
    if (ev->kind == QUAY_TR_REJECT) {
        t->rejects++;
        if (ev->code != QUAY_EPROTO && ev->code != QUAY_ESTATE)
            fz_fail("trace: packet rejected with %d", ev->code);
        return;
    }
    if (ev->kind != QUAY_TR_STATE || ev->req_id == 0)
        return;
    if (ev->from < 0 || ev->from >= QUAY_RS_COUNT_ || ev->to < 0 || ev->to >= QUAY_RS_COUNT_)
        fz_fail("trace: request %#x moves %d -> %d", ev->req_id, ev->from, ev->to);
    uint32_t i = (ev->req_id * 2654435761u) & (FE_TRACE_MAP - 1);
    for (uint32_t k = 0; k < FE_TRACE_MAP; k++, i = (i + 1) & (FE_TRACE_MAP - 1)) {
        if (t->id[i] == ev->req_id) {
            if (t->state[i] != ev->from)
                fz_fail("trace: request %#x moves %s -> %s, but its last move ended in %s",
                        ev->req_id, quay_state_name(ev->from), quay_state_name(ev->to),
                        quay_state_name(t->state[i]));
            break;
        }
        if (t->id[i] == 0) {
            t->id[i] = ev->req_id;
            break;
        }
    }
    if (t->id[i] != ev->req_id)
        return; /* map full: not tracked */
    t->state[i] = (int8_t)ev->to;
    if (ev->to == QUAY_RS_DONE && ++t->done[i] > 1)
        fz_fail("trace: request %#x entered DONE twice", ev->req_id);
}

void fe_trace_clear(fe_trace *t)
{
    uint64_t rej = t->rejects;
    memset(t, 0, sizeof *t);
    t->rejects = rej;
}

/* ---- requests -------------------------------------------------------------- */

fe_req *fe_req_slot(fe *f)
{
    for (int i = 0; i < FE_MAX_REQS; i++)
        if (f->reqs[i].r == NULL)
            return &f->reqs[i];
    return NULL;
}

fe_req *fe_req_pick(fe *f, fz_in *in)
{
    int live[FE_MAX_REQS], n = 0;
    for (int i = 0; i < FE_MAX_REQS; i++)
        if (f->reqs[i].r != NULL)
            live[n++] = i;
    uint8_t k = fz_u8(in);
    return n ? &f->reqs[live[k % n]] : NULL;
}

void fe_req_track(fe *f, fe_req *s, quay_req *r, int kind, uint8_t *buf, size_t cap)
{
    s->r = r;
    s->serial = ++f->serial;
    s->kind = kind;
    s->buf = buf;
    s->cap = cap;
    s->completes = 0;
    s->persist = 0;
    quay_req_set_user(r, (void *)(uintptr_t)s->serial);
}

void fe_check_status(const fe_req *s, const quay_status *st)
{
    static const int errs[] = {QUAY_ETRUNCATE, QUAY_ECANCELLED, QUAY_EPEER, QUAY_ENOTPOSTED,
                               QUAY_EPROTO, QUAY_ESTATE, -1};
    if (st->error != 0 && !fz_code_in(st->error, errs))
        fz_fail("request status error %d (%s)", st->error, quay_strerror(st->error));
    if (st->cancelled && st->error != QUAY_ECANCELLED)
        fz_fail("cancelled request with error %d", st->error);
    if (s->kind == FR_RECV && st->count > s->cap)
        fz_fail("receive of capacity %zu reports %llu bytes", s->cap,
                (unsigned long long)st->count);
    if (s->kind == FR_RECV && st->error == QUAY_ETRUNCATE && st->count != s->cap)
        fz_fail("truncated receive delivered %llu of capacity %zu",
                (unsigned long long)st->count, s->cap);
}

static void on_complete(fe *f, const quay_action *a)
{
    uint64_t serial = (uint64_t)(uintptr_t)a->user;
    quay_status st;
    for (int i = 0; i < FE_MAX_REQS; i++) {
        fe_req *s = &f->reqs[i];
        if (s->r == NULL || s->serial != serial)
            continue;
        if (a->req != s->r)
            fz_fail("COMPLETE action: user %llu names another request",
                    (unsigned long long)serial);
        f->ncompletes++;
        if (++s->completes > 1)
            fz_fail("request %llu: second COMPLETE action", (unsigned long long)serial);
        if (quay_req_test(s->r, &st) != 1)
            fz_fail("request %llu: COMPLETE action but quay_req_test says pending",
                    (unsigned long long)serial);
        fe_check_status(s, &st);
        return;
    }
    fz_fail("COMPLETE action for a request the harness does not hold (user %llu)",
            (unsigned long long)serial);
}

/* ---- pulling actions ----------------------------------------------------------- */

void fe_opdone(fe *f, uint64_t tok, int status)
{
    int rc = quay_on_op_done(f->e, tok, status);
    static const int ok[] = {QUAY_ESTATE, -1};
    fe_check_rc(f, "quay_on_op_done", rc, ok);
    f->done_tok[f->ndone_tok++ % 8] = tok;
}

/* Policy 0: op_done at once, 2: at once with `fail`, 1 and 3: later. */
static void take_token(fe *f, uint64_t tok, int policy, int fail)
{
    if ((policy & 1) && f->npend < FE_MAX_PEND)
        f->pend[f->npend++] = tok;
    else
        fe_opdone(f, tok, policy == 2 ? fail : 0);
}

/* A train the engine sent: its shape whole (train_shape) and its
 * first message one the decoder takes. Returns the first one's length. */
static size_t check_train(const uint8_t *b, size_t n)
{
    wire_hdr h;
    if (train_shape(b, n) < 2)
        fz_fail("the engine sent a malformed train (%zu bytes)", n);
    size_t first = WIRE_ENV_LEN + (size_t)wire_get64(b + 24);
    if (wire_decode_train(b, first, &h) < 0 || h.type != QUAY_PKT_EAGER)
        fz_fail("the engine sent a train whose first message its decoder refuses");
    for (size_t off = first; off < n; off += WIRE_PIECE_LEN + wire_get32(b + off + 4))
        if ((int32_t)wire_get32(b + off) < 0)
            fz_fail("the engine sent a train piece with a negative tag");
    return first;
}

static void record_send(fe *f, const quay_action *a, int policy)
{
    uint8_t b[FE_PKT_MAX + CHAN_FRAME_LEN];
    size_t n = 0;
    if (a->peer < 0 || a->peer >= f->n || a->peer == f->me)
        fz_fail("SEND to peer %d", a->peer);
    if (a->iovcnt < 1 || a->iovcnt > QUAY_ACTION_IOV_MAX)
        fz_fail("SEND with %u iovecs", a->iovcnt);
    size_t total = 0;
    for (uint32_t i = 0; i < a->iovcnt; i++) {
        if (a->iov[i].len && a->iov[i].base == NULL)
            fz_fail("SEND iovec %u of %zu bytes at NULL", i, a->iov[i].len);
        total += a->iov[i].len;
    }
    size_t body_max = f->cfg.eager_max > f->cfg.frag_size ? f->cfg.eager_max : f->cfg.frag_size;
    size_t max = f->cfg.max_packet ? f->cfg.max_packet : QUAY_MAX_HEADER + body_max;
    if (total > max)
        fz_fail("SEND of %zu bytes, max_packet %zu", total, max);
    for (uint32_t i = 0; i < a->iovcnt; i++) {
        /* (read every byte: ASan checks the engine's slices) */
        volatile uint8_t sum = 0;
        for (size_t k = 0; k < a->iov[i].len; k++)
            sum = (uint8_t)(sum + ((const uint8_t *)a->iov[i].base)[k]);
        (void)sum;
        if (a->iov[i].len <= sizeof b - n)
            memcpy(b + n, a->iov[i].base, a->iov[i].len);
        n += a->iov[i].len;
    }
    if (n > sizeof b) { /* (a configuration with huge packets: not recorded) */
        take_token(f, a->token, policy, QUAY_EPEER);
        return;
    }
    const uint8_t *body = b;
    size_t blen = n;
    if (fe_flow(f)) {
        fe_peer *pe = &f->peers[a->peer];
        if (n < CHAN_FRAME_LEN || b[0] != CHAN_VERSION || (b[1] != CHAN_DATA && b[1] != CHAN_ACK))
            fz_fail("SEND without a channel frame (%zu bytes)", n);
        uint16_t fl = wire_get16(b + 2);
        int ch = (int)((fl & CHAN_F_CHAN_MASK) >> CHAN_F_CHAN_SHIFT);
        if (ch >= f->nch)
            fz_fail("frame for channel %d", ch);
        uint32_t crc = wire_get32(b + 16);
        wire_put32(b + 16, 0);
        if (fe_frame_crc(f, ch, f->me, a->peer, b, n) != crc)
            fz_fail("frame CRC does not match channel %d's key %#x", ch, f->key[ch]);
        wire_put32(b + 16, crc);
        if (ch == 0) {
            uint32_t seq = wire_get32(b + 4), ack = wire_get32(b + 8);
            if (b[1] == CHAN_DATA && (int32_t)(seq + 1 - pe->rx_hi) > 0)
                pe->rx_hi = seq + 1;
            if ((int32_t)(ack - pe->eng_ack) > 0 || (fl & CHAN_F_NACK))
                pe->eng_ack = ack;
        }
        body = b + CHAN_FRAME_LEN;
        blen = n - CHAN_FRAME_LEN;
        if (b[1] == CHAN_ACK && blen != 0)
            fz_fail("ACK-only frame with %zu body bytes", blen);
    }
    if (blen != 0) {
        fe_out *o = &f->outs[f->outpos];
        wire_hdr h;
        int rc;
        if (blen >= 4 && body[1] == QUAY_PKT_EAGER && (wire_get16(body + 2) & WIRE_F_MORE)) {
            /* a train (coalesced inline sends): checked whole, the first
             * message kept as the packet the fake peer may answer */
            blen = check_train(body, blen);
            rc = wire_decode_train(body, blen, &h);
        } else {
            rc = wire_decode(body, blen, &h);
        }
        if (rc < 0)
            fz_fail("the engine sent a packet its own decoder refuses (%zu bytes, type %u)",
                    blen, blen > 1 ? body[1] : 0);
        o->peer = a->peer;
        o->len = blen < FE_OUT_MAX ? blen : FE_OUT_MAX;
        memcpy(o->b, body, o->len);
        o->ok = 1;
        o->h = h;
        f->outpos = (f->outpos + 1) % FE_MAX_OUTS;
        if (f->nouts < FE_MAX_OUTS)
            f->nouts++;
        if (fe_verbose)
            fprintf(stderr, "out -> %d: %s sreq %#x rreq %#x seq %u len %llu key %#llx\n",
                    a->peer, quay_pkt_name(h.type), h.sreq, h.rreq, h.seq,
                    (unsigned long long)h.len, (unsigned long long)h.key);
        add_id(f, h.sreq);
        add_id(f, h.rreq);
        add_id(f, h.slot);
        add_id(f, h.seq);
        fe_add_key(f, h.key);
    }
    take_token(f, a->token, policy, QUAY_EPEER);
}

static void pull(fe *f, int max, int policy)
{
    quay_action a;
    for (int i = 0; i < max && !f->dead; i++) {
        int rc = quay_next_action(f->e, &a);
        if (rc == 0)
            return;
        if (rc < 0) {
            fe_check_rc(f, "quay_next_action", rc, (const int[]){-1});
            return;
        }
        switch (a.kind) {
        case QUAY_ACT_SEND:
            record_send(f, &a, policy);
            break;
        case QUAY_ACT_SEND_MULTI: {
            /* one payload, several destinations each with its header */
            if (!(f->cfg.transport_caps & QUAY_CAP_MULTI_SEND) || fe_flow(f) ||
                a.nmulti > QUAY_MULTI_MAX || a.iovcnt != 2)
                fz_fail("SEND_MULTI (%u more, %u iovecs) not enabled or malformed", a.nmulti,
                        a.iovcnt);
            quay_action one = a;
            one.kind = QUAY_ACT_SEND;
            record_send(f, &one, policy);
            for (uint32_t i = 0; i < a.nmulti; i++) {
                one.peer = a.multi[i].peer;
                one.token = a.multi[i].token;
                one.iov[0] = a.multi[i].hdr;
                record_send(f, &one, policy);
            }
            break;
        }
        case QUAY_ACT_RDMA_PUT:
        case QUAY_ACT_RDMA_GET:
        case QUAY_ACT_RDMA_ATOMIC: {
            if (a.peer < 0 || a.peer >= f->n || a.peer == f->me)
                fz_fail("RDMA action for peer %d", a.peer);
            uint64_t len = a.kind == QUAY_ACT_RDMA_ATOMIC ? 8 : a.rdma.len;
            if (len > (1u << 20) || (len && a.rdma.local == NULL))
                fz_fail("RDMA action of %llu bytes at %p", (unsigned long long)len,
                        a.rdma.local);
            fe_add_key(f, a.rdma.key);
            if (a.kind == QUAY_ACT_RDMA_PUT) {
                volatile uint8_t sum = 0;
                for (uint64_t k = 0; k < len; k++)
                    sum = (uint8_t)(sum + ((const uint8_t *)a.rdma.local)[k]);
                (void)sum;
            } else {
                fe_pattern(a.rdma.local, (size_t)len, (uint32_t)a.rdma.offset);
            }
            take_token(f, a.token, policy, QUAY_ESTATE); /* 2: the target refused */
            break;
        }
        case QUAY_ACT_NOTIFY:
            if (a.peer < 0 || a.peer >= f->n)
                fz_fail("NOTIFY for peer %d", a.peer);
            break;
        case QUAY_ACT_COMPLETE:
            on_complete(f, &a);
            break;
        case QUAY_ACT_OFFLOAD:
            if (!f->cfg.coll_offload || a.offload.desc == NULL)
                fz_fail("OFFLOAD action without coll_offload");
            f->cookies[f->ncookies++ % 8] = a.offload.desc->cookie;
            break;
        case QUAY_ACT_OFFLOAD_DONE: {
            int known = 0;
            for (int k = 0; k < 8 && k < f->nagent; k++)
                known |= f->agent_cookies[k] == a.offload.cookie;
            if (!known && f->nagent <= 8)
                fz_fail("OFFLOAD_DONE for cookie %llu never posted",
                        (unsigned long long)a.offload.cookie);
            break;
        }
        default:
            fz_fail("action of kind %d (not enabled in this configuration)", a.kind);
        }
    }
}

/* ---- operations ------------------------------------------------------------------ */

size_t fe_size_class(const fe *f, uint8_t c)
{
    size_t em = f->cfg.eager_max, fr = f->cfg.frag_size;
    size_t v;
    switch (c % 10) {
    case 0: v = 0; break;
    case 1: v = 1; break;
    case 2: v = 7 + (c >> 4); break;
    case 3: v = em - 1; break;
    case 4: v = em; break;
    case 5: v = em + 1; break;
    case 6: v = 2 * fr + 3; break;
    case 7: v = (size_t)f->cfg.pipeline_depth * fr * 2 + 5; break;
    case 8: v = 1000; break;
    default: v = (size_t)(c >> 4) * 97u; break;
    }
    return v > 4096 ? 4096 : v;
}

fe_comm *fe_comm_pick(fe *f, uint8_t k)
{
    fe_comm *c = &f->comms[k % FE_MAX_COMMS];
    return c->c != NULL ? c : &f->comms[0];
}

/* Comm rank of world rank w in the communicator of context ctx (the
 * collective twin's too), or w if unknown. */
int32_t fe_crank_of(const fe *f, uint32_t ctx, int32_t w)
{
    ctx &= ~QUAY_CTX_COLL;
    for (int i = 0; i < FE_MAX_COMMS; i++) {
        const fe_comm *c = &f->comms[i];
        if (c->c == NULL || c->ctx != ctx)
            continue;
        for (int32_t r = 0; r < c->size; r++)
            if (c->world[r] == w)
                return r;
    }
    return w;
}

/* A fake peer: any rank but this one (FE_RAW alone may claim to come
 * from this engine's own rank, or from outside the world). */
int32_t fe_peer_of(const fe *f, uint8_t b)
{
    return (int32_t)((f->me + 1 + b % (f->n - 1)) % f->n);
}

/* ---- set-up, checks, tear-down ------------------------------------------------------ */

/* Configuration overrides (h0 bit 7): a count byte (bits 0-2: records;
 * bit 7: one allocation during creation fails, the next byte says which),
 * then records [field][value selector (fe_value)]. Any value goes; the
 * engine must refuse an invalid configuration with QUAY_EINVAL. */
static uint32_t fe_value(fz_in *in)
{
    uint8_t s = fz_u8(in);
    switch (s % 6) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 2 + (s >> 3);
    case 3: return UINT32_MAX - (s >> 3);
    case 4: return (uint32_t)1 << (s >> 3);
    default: return fz_u32(in);
    }
}

static void overrides(fe *f, fz_in *in)
{
    quay_config *c = &f->cfg;
    uint8_t k = fz_u8(in);
    if (k & 0x80)
        f->fail_create = 1 + fz_u8(in);
    for (int i = 0; i < (k & 7); i++) {
        uint8_t field = fz_u8(in);
        uint32_t v = fe_value(in);
        if (fz_verbose() >= 2)
            fprintf(stderr, "override: field %d = %u\n", field % 40, v);
        switch (field % 40) {
        case 0: c->version = v; break;
        case 1: c->flags = v; break;
        case 2: c->eager_max = v; break;
        case 3: c->frag_size = v; break;
        case 4: c->pipeline_depth = v; break;
        case 5: c->max_packet = v; break;
        case 6: c->max_requests = v; break;
        case 7: c->max_unexpected = v; break;
        case 8: c->unexpected_bytes_max = v; break;
        case 9: c->max_out = v; break;
        case 10: c->max_ctrl = v; break;
        case 11: c->max_comms = v; break;
        case 12: c->reorder_window = v; break;
        case 13: c->transport_caps = v; break;
        case 14: c->flow = v; break;
        case 15: c->flow_window = v; break;
        case 16: c->rto_init_ns = v; break;
        case 17: c->rto_max_ns = v; break;
        case 18: c->retry_limit = v; break;
        case 19: c->flow_credits = v; break;
        case 20: c->channels = v; break;
        case 21: c->max_regions = v; break;
        case 22: c->rndv_mode = v; break;
        case 23: c->rtr = v; break;
        case 24: c->rtr_per_peer = v; break;
        case 25: c->rtr_any = v; break;
        case 26: c->any_slots = v; break;
        case 27: c->coll_barrier = v; break;
        case 28: c->coll_bcast = v; break;
        case 29: c->coll_reduce = v; break;
        case 30: c->coll_allreduce = v; break;
        case 31: c->coll_tree_degree = v; break;
        case 32: c->coll_latency_ns = v; break;
        case 33: c->coll_gap_ns = v; break;
        case 34: c->coll_ps_per_byte = v; break;
        case 35: c->coll_segment = v; break;
        case 36: c->coll_max = v; break;
        case 37: c->coll_offload = v; break;
        case 38: c->coll_bypass = v; break;
        default: c->rank = (int32_t)v; break;
        }
    }
}

static void configure(fe *f, fz_in *in)
{
    static const size_t eager[4] = {16, 64, 256, 1024};
    static const size_t frag[4] = {16, 32, 64, 128};
    static const uint32_t depth[4] = {1, 2, 4, 8};
    uint8_t h0 = fz_u8(in), h1 = fz_u8(in), h2 = fz_u8(in), h3 = fz_u8(in);
    quay_config *c = &f->cfg;
    f->n = 2 + (h0 & 7) % 7;
    f->me = ((h0 >> 3) & 15) % f->n;
    quay_config_default(c);
    memset(c->key_secret, 0x5a, sizeof c->key_secret); /* (tests: any fixed secret) */
    c->rank = f->me;
    c->nranks = f->n;
    c->seed = 0xF00D;
    c->flags = QUAY_CFG_CHECK_ORACLE | ((h3 & 0x80) ? 0 : QUAY_CFG_COMPLETE_ACTIONS);
    c->flow = (h1 & 3) == 3 ? QUAY_FLOW_NONE : h1 & 3;
    c->channels = c->flow != QUAY_FLOW_NONE && (h1 & 4) ? 2 : 1;
    c->rndv_mode = (h1 >> 3) & 3;
    if ((h1 & 0x20) || c->rndv_mode == QUAY_RNDV_GET || c->rndv_mode == QUAY_RNDV_PUT)
        c->transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT | QUAY_CAP_RDMA_ATOMIC;
    if (h1 & 0x40) {
        c->rtr = 1;
        c->rtr_any = (h1 >> 7) & 1;
        c->transport_caps |= QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
        c->rtr_per_peer = 4;
        c->any_slots = 4;
    }
    c->eager_max = eager[h2 & 3];
    c->frag_size = frag[(h2 >> 2) & 3];
    c->pipeline_depth = depth[(h2 >> 4) & 3];
    c->max_requests = 64;
    c->max_unexpected = 64;
    c->unexpected_bytes_max = 16384;
    c->max_out = 64;
    c->max_ctrl = 32;
    c->max_comms = 8;
    c->max_regions = 16;
    c->reorder_window = 32;
    c->flow_window = 32;
    c->rto_init_ns = 1000;
    c->rto_max_ns = 1u << 20;
    c->retry_limit = 6;
    c->coll_max = 8;
    if (h2 & 0x40) {
        c->max_requests = 8;
        c->max_unexpected = 4;
        c->unexpected_bytes_max = 256;
        c->max_out = 4;
        c->max_ctrl = 4;
        c->reorder_window = 4;
        c->max_regions = 4;
        c->flow_window = 4;
        c->coll_max = 2;
    }
    c->coll_bypass = (h2 >> 7) & 1;
    c->coll_barrier = h3 & 3;
    c->coll_bcast = (h3 >> 2) & 3;
    c->coll_allreduce = (h3 >> 4) & 3;
    if (h3 & 0x40) {
        f->mem.fail_at = 0; /* armed after creation */
        f->fail_armed = 1 + fz_u8(in);
    }
    if (h0 & 0x80)
        overrides(f, in);
}

static void check_bounds(fe *f)
{
    quay_stats st;
    /* (communicators: each may have its collective twin, pool 2 x max) */
    for (int c = 0; c < f->nch; c++) {
        quay_engine_stats(f->ch[c], &st);
        if (st.reqs_in_use > f->cfg.max_requests || st.umsgs_in_use > f->cfg.max_unexpected ||
            st.bytes_unexpected > f->cfg.unexpected_bytes_max ||
            st.outs_in_use > f->cfg.max_out || st.comms_in_use > 2 * f->cfg.max_comms ||
            st.regions_in_use > f->cfg.max_regions ||
            st.held_out_of_order > f->cfg.max_unexpected)
            fz_fail("channel %d beyond its bounds: reqs %u/%u umsgs %u/%u bytes %llu/%zu outs "
                    "%u/%u comms %u/%u regions %u/%u held %u",
                    c, st.reqs_in_use, f->cfg.max_requests, st.umsgs_in_use,
                    f->cfg.max_unexpected, (unsigned long long)st.bytes_unexpected,
                    f->cfg.unexpected_bytes_max, st.outs_in_use, f->cfg.max_out,
                    st.comms_in_use, 2 * f->cfg.max_comms, st.regions_in_use, f->cfg.max_regions,
                    st.held_out_of_order);
    }
}

static void teardown(fe *f)
{
    /* Creation, unexpected payloads (kept, and copies in flight), slack,
     * and quay_engine_restore's validation scratch: a few bytes per pool
     * slot (request, message, region, communicator, peer), each slot
     * itself several times that, so at most a quarter of creation. */
    size_t bound = f->base + f->base / 4 + 2 * f->cfg.unexpected_bytes_max + 512 * 1024;
    if (!f->dead && f->mem.peak > bound)
        fz_fail("memory: peak %zu bytes, bound %zu (creation %zu)", f->mem.peak, bound, f->base);
    quay_engine_free(f->e);
    if (f->mem.live != 0)
        fz_fail("memory: %zu bytes left after quay_engine_free", f->mem.live);
    for (int i = 0; i < f->nkeep; i++) {
        const uint8_t *b = f->keep[i];
        if (f->keep_guard[i])
            for (size_t k = 0; k < FE_GUARD; k++)
                if (b[f->keep_len[i] + k] != FE_FILL)
                    fz_fail("receive buffer of %zu bytes: byte %zu past its end written",
                            f->keep_len[i], k);
        free(f->keep[i]);
    }
    for (int i = 0; i < FE_MAX_HIST; i++)
        free(f->hist[i].b);
    for (int p = 0; p < 8; p++)
        for (int k = 0; k < FE_RETX; k++)
            free(f->peers[p].retx[k]);
    for (int i = 0; i < 4; i++)
        free(f->regbuf[i]);
    free(f->snap.blob);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fe *f;
    fz_in in;
    int rc, ops = 0;

    fz_harness = "fuzz_engine";
    fe_verbose = fz_verbose() >= 2;
    if (size > FE_MAX_INPUT)
        size = FE_MAX_INPUT;
    f = calloc(1, sizeof *f);
    if (f == NULL)
        fz_fail("out of memory");
    fz_init(&in, data, size);
    configure(f, &in);
    fz_mem_use(&f->mem, &f->cfg);
    f->mem.fail_at = (uint64_t)f->fail_create;
    /* Pools an override makes huge are valid but would take the machine:
     * allocations over 4 MiB fail (creation must then leak nothing). */
    f->mem.max_block = (size_t)4 << 20;
    rc = quay_engine_new(&f->cfg, &f->e);
    f->mem.fail_at = 0;
    if (rc != 0) {
        /* refused (a configuration from overrides) or out of memory (an
         * allocation made to fail): nothing may be left behind */
        if (!(rc == QUAY_EINVAL || rc == QUAY_EVERSION ||
              (rc == QUAY_ENOMEM && f->mem.nfailed != 0)))
            fz_fail("quay_engine_new: %s", quay_strerror(rc));
        if (f->mem.live != 0)
            fz_fail("memory: quay_engine_new failed (%s) and left %zu bytes", quay_strerror(rc),
                    f->mem.live);
        free(f);
        return 0;
    }
    f->base = f->mem.live;
    f->me = f->cfg.rank; /* (an override may have moved it) */
    f->nch = (int)f->cfg.channels; /* 1..QUAY_MAX_CHANNELS, or creation failed */
    for (int c = 0; c < f->nch; c++) {
        f->ch[c] = quay_engine_channel(f->e, (uint32_t)c);
        quay_set_trace(f->ch[c], on_trace, &f->tr[c]);
    }
    crc32c_table_init(f->crc);
    for (int i = 0; i < 4; i++) {
        f->regbuf[i] = malloc(256);
        if (f->regbuf[i] == NULL)
            fz_fail("out of memory");
        memset(f->regbuf[i], 0, 256);
    }
    f->comms[0].ctx = 0;
    f->comms[0].size = f->n;
    for (int w = 0; w < f->n; w++)
        f->comms[0].world[w] = w;
    rc = quay_comm_create(f->e, 0, f->n, NULL, &f->comms[0].c);
    if (rc != 0)
        fz_fail("world comm_create: %s", quay_strerror(rc));
    if (f->fail_armed) /* the fail_armed-th allocation from now on fails */
        f->mem.fail_at = (uint64_t)f->fail_armed;

    while (fz_more(&in) && ops++ < FE_MAX_OPS && !f->dead) {
        uint8_t op = fz_u8(&in) % FE_NOPS;
        if (fe_verbose)
            fprintf(stderr, "op %d: %u\n", ops, op);
        if (f->comms[0].c == NULL && op != FE_PULL && op != FE_CTX && op != FE_TIME &&
            op != FE_OPDONE && op != FE_COMM)
            continue; /* channel 0 was reset: the world is gone */
        switch (op) {
        case FE_ISEND: fe_op_isend(f, &in); break;
        case FE_IRECV: fe_op_irecv(f, &in); break;
        case FE_IPROBE: fe_op_iprobe(f, &in); break;
        case FE_IMRECV: fe_op_imrecv(f, &in); break;
        case FE_CANCEL:
        case FE_FREE:
        case FE_TEST: fe_op_req(f, &in, op); break;
        case FE_PULL: {
            uint8_t v = fz_u8(&in);
            pull(f, (v & 31) + 1, (v >> 5) & 3);
            break;
        }
        case FE_OPDONE: fe_op_opdone(f, &in); break;
        case FE_ENV: fe_op_env(f, &in); break;
        case FE_RESPOND: fe_op_respond(f, &in); break;
        case FE_ECHO: fe_op_echo(f, &in); break;
        case FE_FORGE: fe_op_forge(f, &in); break;
        case FE_RAW: fe_op_raw(f, &in); break;
        case FE_REPLAY: fe_op_replay(f, &in); break;
        case FE_CHAN: fe_op_chan(f, &in); break;
        case FE_TIME: fe_op_time(f, &in); break;
        case FE_CTX: fe_op_ctx(f, &in); break;
        case FE_COMM: fe_op_comm(f, &in); break;
        case FE_MEM: fe_op_mem(f, &in); break;
        case FE_RMA: fe_op_rma(f, &in); break;
        case FE_COLL: fe_op_coll(f, &in); break;
        case FE_BUF: fe_op_buf(f, &in); break;
        default: fe_op_peerfail(f, &in); break;
        }
        if (!f->dead)
            check_bounds(f);
    }
    /* Drain what is left (bounded), finishing every transmission. */
    for (int i = 0; i < 8 && !f->dead; i++) {
        pull(f, 64, 0);
        while (f->npend > 0 && !f->dead)
            fe_opdone(f, f->pend[--f->npend], 0);
    }
    if (fz_verbose()) {
        quay_stats st;
        int done = (int)f->ncompletes;
        quay_engine_stats(f->e, &st);
        fprintf(stderr,
                "fuzz_engine: %d ops, %d ranks, flow %u; in %llu out %llu rejected %llu "
                "deferred %llu; completes %d; rndv get %llu put %llu copy %llu; rtr sent %llu "
                "used %llu; any announced %llu claimed %llu flags %llu; retransmits %llu nacks "
                "%llu; coll %llu; saves compared %llu%s\n",
                ops, f->n, f->cfg.flow, (unsigned long long)st.pkts_in,
                (unsigned long long)st.pkts_out, (unsigned long long)st.pkts_rejected,
                (unsigned long long)st.pkts_deferred, done, (unsigned long long)st.rndv_get,
                (unsigned long long)st.rndv_put, (unsigned long long)st.rndv_copy,
                (unsigned long long)st.rtr_sent, (unsigned long long)st.rtr_used,
                (unsigned long long)st.any_announced, (unsigned long long)st.any_claimed,
                (unsigned long long)st.any_flags, (unsigned long long)st.retransmits,
                (unsigned long long)st.nacks_sent, (unsigned long long)st.coll_started,
                (unsigned long long)f->blob_fixed, f->dead ? " (dead: allocation failed)" : "");
    }
    teardown(f);
    free(f);
    return 0;
}