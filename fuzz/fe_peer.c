/*
 * fe_peer.c — fuzz_engine's fake peers: channel frames (valid CRC for the
 * channel's key, ACK / NACK / PING / grants, a retransmission store),
 * envelopes in and out of sequence, answers to what the engine sent them,
 * echoes, forged headers, raw bytes and replays (fuzz_engine.h).
 */
#include "fe.h"

/* ---- channel frames --------------------------------------------------------- */

int fe_flow(const fe *f)
{
    return f->cfg.flow != QUAY_FLOW_NONE;
}

/* A frame from peer p on channel ch, with the CRC the engine expects. */
static size_t frame(fe *f, int32_t p, uint8_t *b, int ch, uint8_t kind, uint16_t flags,
                    uint32_t seq, uint32_t ack, uint32_t aux, const uint8_t *body, size_t blen)
{
    flags = (uint16_t)(flags | (uint16_t)(ch << CHAN_F_CHAN_SHIFT));
    b[0] = CHAN_VERSION;
    b[1] = kind;
    wire_put16(b + 2, flags);
    wire_put32(b + 4, seq);
    wire_put32(b + 8, ack);
    wire_put32(b + 12, aux);
    wire_put32(b + 16, 0);
    if (blen)
        memcpy(b + CHAN_FRAME_LEN, body, blen);
    wire_put32(b + 16, fe_frame_crc(f, ch % QUAY_MAX_CHANNELS, p, f->me, b,
                                    CHAN_FRAME_LEN + blen));
    return CHAN_FRAME_LEN + blen;
}

/* The usual flags and aux field of a frame from peer p. */
static void frame_fields(fe *f, int32_t p, uint16_t *flags, uint32_t *aux)
{
    if (f->cfg.flow == QUAY_FLOW_CREDIT) {
        *flags = CHAN_F_CREDIT;
        *aux = f->peers[p].rx_hi + 64; /* room for what it may send */
    } else {
        *flags = 0;
        *aux = 0;
    }
}

/* ---- delivering ------------------------------------------------------------- */

static void hist_add(fe *f, int32_t p, const uint8_t *b, size_t n)
{
    fe_hist *h = &f->hist[f->histpos];
    free(h->b);
    h->b = malloc(n ? n : 1);
    if (h->b == NULL)
        fz_fail("out of memory");
    memcpy(h->b, b, n);
    h->len = n;
    h->peer = p;
    f->histpos = (f->histpos + 1) % FE_MAX_HIST;
    if (f->nhist < FE_MAX_HIST)
        f->nhist++;
}

/* Every channel's state (snapshot_state) into b[0..cap), back to back,
 * with each one's length: 0 when some state has no blob form or it does
 * not fit (then nothing is compared). */
static size_t state_of(fe *f, uint8_t *b, size_t cap)
{
    size_t at = 0;
    for (int c = 0; c < f->nch; c++) {
        if (cap - at < 8)
            return 0;
        size_t n = snapshot_state(f->ch[c], b + at + 8, cap - at - 8);
        if (n == 0 || n > cap - at - 8)
            return 0;
        memcpy(b + at, &n, sizeof n < 8 ? sizeof n : 8);
        at += 8 + n;
    }
    return at;
}

/* Offer bytes as they are; returns quay_on_packet's code. *rejected is set
 * when the engine rejected the packet inside (trace REJECT). A packet
 * answered with an error must leave every channel's state as it was. */
static int offer(fe *f, int32_t p, const uint8_t *b, size_t n, int *rejected)
{
    static uint8_t before[1u << 20], after[1u << 20];
    uint8_t *copy = malloc(n ? n : 1);
    uint64_t rej0 = 0, rej1 = 0;
    int rc;
    if (copy == NULL)
        fz_fail("out of memory");
    if (n)
        memcpy(copy, b, n);
    hist_add(f, p, b, n);
    for (int c = 0; c < f->nch; c++)
        rej0 += f->tr[c].rejects;
    size_t nb = state_of(f, before, sizeof before);
    rc = quay_on_packet(f->e, p, copy, n);
    if (nb != 0 && (rc == QUAY_EPROTO || rc == QUAY_ESTATE) && !f->dead) {
        size_t na = state_of(f, after, sizeof after);
        if (na != 0 && (na != nb || memcmp(before, after, nb) != 0)) {
            size_t at = 0;
            while (at < na && at < nb && before[at] == after[at])
                at++;
            fz_fail("quay_on_packet(peer %d) answered %s but changed the engine's state "
                    "(%zu bytes, then %zu; first difference at byte %zu)",
                    p, quay_strerror(rc), nb, na, at);
        }
    }
    for (int c = 0; c < f->nch; c++)
        rej1 += f->tr[c].rejects;
    if (fe_verbose) {
        const uint8_t *w = fe_flow(f) && n > CHAN_FRAME_LEN ? b + CHAN_FRAME_LEN : b;
        size_t wn = fe_flow(f) && n > CHAN_FRAME_LEN ? n - CHAN_FRAME_LEN : n;
        fprintf(stderr, "in  <- %d: %zu bytes %s%s: %s\n", p, n,
                wn > 1 && w[0] == 1 ? quay_pkt_name(w[1]) : "?",
                fe_flow(f) && n == CHAN_FRAME_LEN ? " (frame only)" : "",
                rc == 0 ? "ok" : quay_strerror(rc));
    }
    free(copy);
    {
        static const int ok[] = {QUAY_EAGAIN, QUAY_EPROTO, QUAY_ESTATE, QUAY_EINVAL, -1};
        fe_check_rc(f, "quay_on_packet", rc, ok);
    }
    if (rc == QUAY_EINVAL && p >= 0 && p < f->n)
        fz_fail("quay_on_packet(peer %d) answered EINVAL", p);
    if (rejected != NULL)
        *rejected = rej1 != rej0;
    return rc;
}

/* Deliver engine packet body[0..n) from peer p (framed under flow
 * control). Returns 1 if it was taken (sequence numbers advance). */
static int deliver(fe *f, int32_t p, const uint8_t *body, size_t n)
{
    uint8_t b[FE_PKT_MAX + CHAN_FRAME_LEN];
    int rejected = 0, rc;
    if (n > FE_PKT_MAX)
        return 0;
    if (!fe_flow(f)) {
        rc = offer(f, p, body, n, &rejected);
        return rc == 0 && !rejected;
    }
    if (p == f->me)
        return 0; /* never framed: it would be refused before the body */
    fe_peer *pe = &f->peers[p];
    uint16_t flags;
    uint32_t aux;
    frame_fields(f, p, &flags, &aux);
    uint32_t seq = pe->chan_next++;
    size_t len = frame(f, p, b, 0, CHAN_DATA, flags, seq, pe->rx_hi, aux, body, n);
    int k = (int)(seq % FE_RETX);
    free(pe->retx[k]);
    pe->retx[k] = malloc(len);
    if (pe->retx[k] == NULL)
        fz_fail("out of memory");
    memcpy(pe->retx[k], b, len);
    pe->retx_len[k] = len;
    pe->retx_seq[k] = seq;
    rc = offer(f, p, b, len, &rejected);
    return rc == 0 && !rejected;
}

/* Go back: the peer retransmits its frames from the engine's ACK on. */
static void retransmit(fe *f, int32_t p)
{
    fe_peer *pe = &f->peers[p];
    for (uint32_t s = pe->eng_ack, i = 0; s != pe->chan_next && i < FE_RETX; s++, i++) {
        int k = (int)(s % FE_RETX);
        if (pe->retx[k] != NULL && pe->retx_seq[k] == s)
            offer(f, p, pe->retx[k], pe->retx_len[k], NULL);
    }
}

/* Encode h with `plen` payload bytes of pattern into out; returns length. */
static size_t build(const wire_hdr *h, uint8_t *out, const uint8_t *payload, size_t plen)
{
    size_t hl = wire_encode(h, out);
    if (hl == 0 || plen > FE_PKT_MAX - hl)
        return 0;
    if (plen)
        memcpy(out + hl, payload, plen);
    return hl + plen;
}

static int sequenced(uint8_t type)
{
    return type == QUAY_PKT_EAGER || type == QUAY_PKT_RTS || type == QUAY_PKT_CANCEL_REQ ||
           type == QUAY_PKT_RTR || type == QUAY_PKT_SC ||
           (type >= QUAY_PKT_ENA_ANY && type <= QUAY_PKT_DISABLE_ANY);
}

/* Sequence number by mode; *inorder tells whether a taken packet uses it. */
static uint32_t seq_by(fe *f, fz_in *in, int32_t p, uint8_t mode, int *inorder)
{
    uint32_t next = f->peers[p].tx_seq;
    *inorder = 0;
    switch (mode % 4) {
    case 0: *inorder = 1; return next;
    case 1: return next + (uint32_t)((mode >> 2) % 4) + 1;
    case 2: return next - 1;
    default: return fz_u8(in);
    }
}

/* Send h (+ payload) from p; on acceptance of an in-order sequenced
 * packet the peer's sequence moves on. */
static void send_hdr(fe *f, int32_t p, const wire_hdr *h, const uint8_t *payload, size_t plen,
                     int inorder)
{
    uint8_t b[FE_PKT_MAX];
    size_t n = build(h, b, payload, plen);
    if (n == 0)
        return;
    if (deliver(f, p, b, n) && inorder && sequenced(h->type))
        f->peers[p].tx_seq++;
}

static uint32_t fake_id(fe *f, int32_t p)
{
    return 0x100u + (uint32_t)p * 0x10000u + ++f->peers[p].next_id;
}

/* The fake receive id peer p uses for the engine's send sreq: the same
 * for every CTS of one message. */
static uint32_t rid_of(fe *f, int32_t p, uint32_t sreq)
{
    for (int i = 0; i < 8; i++)
        if (f->rids[i].sreq == sreq && f->rids[i].peer == p)
            return f->rids[i].rreq;
    fe_rid *r = &f->rids[f->ridpos];
    f->ridpos = (f->ridpos + 1) % 8;
    r->peer = p;
    r->sreq = sreq;
    r->rreq = fake_id(f, p);
    return r->rreq;
}

static void send_train(fe *f, int32_t p, const wire_hdr *h, const uint8_t *payload,
                       size_t plen, int inorder, uint8_t sm);

void fe_op_env(fe *f, fz_in *in)
{
    int32_t p = fe_peer_of(f, fz_u8(in));
    uint8_t kind = fz_u8(in), t = fz_u8(in), sz = fz_u8(in), sm = fz_u8(in);
    uint8_t payload[FE_PKT_MAX];
    fe_comm *c = fe_comm_pick(f, (uint8_t)(t >> 4));
    wire_hdr h;
    int inorder;
    memset(&h, 0, sizeof h);
    h.type = (kind & 7) % 6 < 3 ? QUAY_PKT_EAGER : QUAY_PKT_RTS;
    h.flags = (uint16_t)((kind & 7) % 3 == 1   ? WIRE_F_SYNC
                         : (kind & 7) % 3 == 2 ? WIRE_F_READY
                                               : 0);
    if (h.type == QUAY_PKT_RTS) {
        if (kind & 0x08) {
            h.flags |= WIRE_F_KEY;
            h.key = 0xFA4E000000000000ull | kind;
        }
        if (kind & 0x10)
            h.flags |= WIRE_F_PUT_OK;
    }
    h.seq = seq_by(f, in, p, sm, &inorder);
    h.ctx = c->ctx | ((kind & 0x20) ? QUAY_CTX_COLL : 0);
    h.src = fe_crank_of(f, c->ctx, p);
    h.tag = t % 16;
    h.sreq = fake_id(f, p);
    h.len = fe_size_class(f, sz);
    size_t plen = 0;
    if (h.type == QUAY_PKT_EAGER) {
        plen = (size_t)h.len < sizeof payload - QUAY_MAX_HEADER ? (size_t)h.len
                                                                : sizeof payload - QUAY_MAX_HEADER;
        fe_pattern(payload, plen, h.sreq);
    }
    if (h.type == QUAY_PKT_EAGER && (kind & 0xC0) == 0xC0) {
        send_train(f, p, &h, payload, plen, inorder, sm);
        return;
    }
    send_hdr(f, p, &h, payload, plen, inorder);
}

/* A train (wire.h: an EAGER flagged WIRE_F_MORE, then pieces of tag,
 * length and payload) of h and 1 to 3 pieces with the next numbers and
 * tags; `sm`'s high bits may break its shape (the last piece's length
 * past the end, or the first without MORE: bytes left over). */
static void send_train(fe *f, int32_t p, const wire_hdr *h, const uint8_t *payload,
                       size_t plen, int inorder, uint8_t sm)
{
    uint8_t b[FE_PKT_MAX];
    int k = 2 + (sm >> 2) % 3, i;
    wire_hdr e = *h;
    e.flags = (uint16_t)(h->flags | ((sm & 0xC0) == 0x80 ? 0 : WIRE_F_MORE));
    size_t n = build(&e, b, payload, plen);
    if (n == 0)
        return;
    for (i = 1; i < k && n + WIRE_PIECE_LEN + plen <= sizeof b; i++) {
        uint32_t len = (uint32_t)plen + ((sm & 0xC0) == 0x40 && i == k - 1);
        piece_encode(b + n, (h->tag + i) % 16, len);
        memcpy(b + n + WIRE_PIECE_LEN, payload, plen);
        n += WIRE_PIECE_LEN + plen;
    }
    if (deliver(f, p, b, n) && inorder)
        f->peers[p].tx_seq += (uint32_t)i;
}

static const fe_out *out_pick(fe *f, uint8_t k)
{
    if (f->nouts == 0)
        return NULL;
    int i = (f->outpos - 1 - (k % f->nouts) + 2 * FE_MAX_OUTS) % FE_MAX_OUTS;
    return &f->outs[i];
}

/* Peer p writes `n` bytes through the engine's key (as its RDMA_PUT
 * would, after quay_mem_resolve) or reads them (GET). 0 or the refusal. */
int fe_through_key(fe *f, int32_t p, uint64_t key, uint64_t off, uint64_t n, uint32_t access)
{
    void *addr = NULL;
    int rc = quay_mem_resolve(f->e, p, key, off, n, access, &addr);
    static const int ok[] = {QUAY_ESTATE, QUAY_EPROTO, QUAY_EINVAL, -1};
    fe_check_rc(f, "quay_mem_resolve", rc, ok);
    if (rc != 0)
        return rc;
    if (n != 0 && addr == NULL)
        fz_fail("quay_mem_resolve gave NULL for %llu bytes", (unsigned long long)n);
    if (access & QUAY_MEM_WRITE)
        fe_pattern(addr, (size_t)n, (uint32_t)key);
    else {
        volatile uint8_t sum = 0;
        for (uint64_t i = 0; i < n; i++)
            sum = (uint8_t)(sum + ((const uint8_t *)addr)[i]);
        (void)sum;
    }
    return 0;
}

void fe_op_respond(fe *f, fz_in *in)
{
    const fe_out *o = out_pick(f, fz_u8(in));
    uint8_t v = fz_u8(in), prm = fz_u8(in);
    uint8_t payload[FE_PKT_MAX];
    wire_hdr h, r;
    int32_t p;
    if (o == NULL)
        return;
    h = o->h;
    p = o->peer;
    memset(&r, 0, sizeof r);
    switch (h.type) {
    case QUAY_PKT_EAGER:
        if (!(h.flags & (WIRE_F_SYNC | WIRE_F_READY)))
            return;
        r.type = QUAY_PKT_ACK;
        r.sreq = h.sreq;
        r.status = (v & 1) ? QUAY_ENOTPOSTED : 0;
        send_hdr(f, p, &r, NULL, 0, 0);
        return;
    case QUAY_PKT_RTS:
        if ((h.flags & WIRE_F_KEY) && (v & 1)) { /* GET: read, then FIN */
            int rc = fe_through_key(f, p, h.key, 0, (v & 2) ? h.len + prm : h.len, QUAY_MEM_READ);
            r.type = QUAY_PKT_FIN;
            r.sreq = h.sreq;
            r.rreq = rid_of(f, p, h.sreq);
            r.status = rc == 0 ? 0 : QUAY_ESTATE;
        } else if ((h.flags & WIRE_F_PUT_OK) && (v & 2)) { /* keyed CTS: every fragment */
            uint64_t acc = (v & 4) && h.len > prm ? h.len - prm : h.len;
            uint32_t fr = 32u + prm;
            r.type = QUAY_PKT_CTS;
            r.flags = WIRE_F_KEY;
            r.sreq = h.sreq;
            r.rreq = rid_of(f, p, h.sreq);
            r.frag = fr;
            r.index = 1;
            r.grant = (uint32_t)((acc + fr - 1) / fr);
            r.len = acc;
            r.key = 0xFA4E000100000000ull | prm;
        } else if ((h.flags & WIRE_F_READY) && (v & 0x20)) {
            r.type = QUAY_PKT_ACK;
            r.sreq = h.sreq;
            r.status = QUAY_ENOTPOSTED;
        } else {
            static const uint32_t frags[4] = {0, 1, 7, 4096};
            r.type = QUAY_PKT_CTS;
            r.sreq = h.sreq;
            r.rreq = (v & 0x40) ? fake_id(f, p) : rid_of(f, p, h.sreq);
            r.grant = 1u + prm % 8u;
            r.frag = frags[(v >> 2) & 3] ? frags[(v >> 2) & 3] : (uint32_t)f->cfg.frag_size;
            r.index = 1u + (v >> 4) % 3u;
            r.len = (v & 0x80) && h.len > prm ? h.len - prm : h.len;
        }
        send_hdr(f, p, &r, NULL, 0, 0);
        return;
    case QUAY_PKT_CTS:
        if (h.flags & WIRE_F_KEY) { /* PUT: write, then FIN to the receiver */
            int rc = fe_through_key(f, p, h.key, (v & 2) ? prm : 0, h.len, QUAY_MEM_WRITE);
            r.type = QUAY_PKT_FIN;
            r.flags = WIRE_F_TO_RECV;
            r.sreq = h.sreq;
            r.rreq = h.rreq;
            r.status = rc == 0 ? 0 : QUAY_EPROTO;
            send_hdr(f, p, &r, NULL, 0, 0);
            return;
        }
        {
            /* the fragments newly granted (v & 1: from a fuzzed one) */
            fe_grant *gr = NULL;
            for (int i = 0; i < 8; i++)
                if (f->grants[i].rreq == h.rreq && f->grants[i].peer == p)
                    gr = &f->grants[i];
            if (gr == NULL) {
                gr = &f->grants[f->grantpos];
                f->grantpos = (f->grantpos + 1) % 8;
                gr->peer = p;
                gr->rreq = h.rreq;
                gr->upto = 0;
            }
            uint32_t first = (v & 1) ? prm % (h.grant ? h.grant : 1) : gr->upto;
            if (h.grant > gr->upto)
                gr->upto = h.grant;
            for (uint32_t k = first; k < h.grant && k < first + 8 && !f->dead; k++) {
                uint64_t off = (uint64_t)k * h.frag;
                if (off >= h.len)
                    break;
                uint64_t n = h.len - off < h.frag ? h.len - off : h.frag;
                if (n > FE_PKT_MAX - WIRE_DATA_LEN)
                    break;
                r.type = QUAY_PKT_DATA;
                r.rreq = h.rreq;
                r.offset = off;
                fe_pattern(payload, (size_t)n, h.rreq + k);
                send_hdr(f, p, &r, payload, (size_t)n, 0);
            }
        }
        return;
    case QUAY_PKT_CANCEL_REQ:
        r.type = QUAY_PKT_CANCEL_REP;
        r.sreq = h.sreq;
        r.status = v & 1;
        send_hdr(f, p, &r, NULL, 0, 0);
        return;
    case QUAY_PKT_RTR:
        if (h.flags & WIRE_F_CANCEL) {
            r.type = QUAY_PKT_CANCEL_REP;
            r.flags = WIRE_F_FOR_RECV;
            r.sreq = h.rreq;
            r.status = v & 1;
            send_hdr(f, p, &r, NULL, 0, 0);
            return;
        }
        if (h.flags & WIRE_F_REVOKE)
            return;
        {
            uint64_t n = (v & 2) && h.len > prm ? h.len - prm : h.len;
            int rc = fe_through_key(f, p, h.key, 0, n, QUAY_MEM_WRITE);
            r.type = QUAY_PKT_SC;
            r.seq = f->peers[p].tx_seq;
            r.ctx = h.ctx;
            r.src = fe_crank_of(f, h.ctx, p);
            r.tag = h.tag >= 0 ? h.tag : prm % 8;
            r.sreq = fake_id(f, p);
            r.rreq = h.rreq;
            r.status = rc == 0 ? 0 : QUAY_EPROTO;
            r.len = (v & 4) ? n + 1 : n;
            send_hdr(f, p, &r, NULL, 0, 1);
        }
        return;
    case QUAY_PKT_ENA_ANY:
        r.type = QUAY_PKT_ANY_FLAG;
        r.seq = f->peers[p].tx_seq;
        r.ctx = h.ctx;
        r.src = fe_crank_of(f, h.ctx, p);
        r.tag = h.tag >= 0 ? h.tag : prm % 8;
        r.sreq = fake_id(f, p);
        r.slot = h.slot;
        r.len = fe_size_class(f, (uint8_t)(5 + v));
        send_hdr(f, p, &r, NULL, 0, 1);
        return;
    case QUAY_PKT_RTR_ANY:
        r.seq = f->peers[p].tx_seq;
        r.ctx = h.ctx;
        r.src = fe_crank_of(f, h.ctx, p);
        r.rreq = h.rreq;
        r.sreq = h.sreq;
        uint64_t n = (v & 2) && h.len > prm ? h.len - prm : h.len;
        int rc = fe_through_key(f, p, h.key, 0, n, QUAY_MEM_WRITE);
        r.type = QUAY_PKT_SC;
        r.tag = prm % 8;
        r.status = rc == 0 ? 0 : QUAY_EPROTO;
        r.len = n;
        send_hdr(f, p, &r, NULL, 0, 1);
        return;
    case QUAY_PKT_ANY_FLAG:
        r.seq = f->peers[p].tx_seq;
        r.ctx = h.ctx;
        r.src = fe_crank_of(f, h.ctx, p);
        r.sreq = h.sreq;
        if (v & 1) {
            r.type = QUAY_PKT_RTR_ANY;
            r.rreq = fake_id(f, p);
            r.len = h.len + ((v & 2) ? prm : 0);
            r.key = 0xFA4E000200000000ull | prm;
        } else {
            r.type = QUAY_PKT_DISABLE_ANY;
            r.slot = h.slot;
            r.flags = (v & 2) ? WIRE_F_DROP : 0;
        }
        send_hdr(f, p, &r, NULL, 0, 1);
        return;
    default:
        return;
    }
}

/* The engine's own packet comes back from its peer (or another one), as
 * that peer's: its comm rank as src, the peer's sequence number. */
void fe_op_echo(fe *f, fz_in *in)
{
    const fe_out *o = out_pick(f, fz_u8(in));
    uint8_t sm = fz_u8(in), tmp[QUAY_MAX_HEADER];
    wire_hdr h;
    int inorder = 0;
    if (o == NULL)
        return;
    int32_t p = (sm & 0x80) ? fe_peer_of(f, (uint8_t)(o->peer + 1)) : o->peer;
    size_t hlen = wire_encode(&o->h, tmp);
    h = o->h;
    if (sequenced(h.type))
        h.seq = seq_by(f, in, p, (uint8_t)(sm & 0x3f), &inorder);
    h.src = fe_crank_of(f, h.ctx, p);
    if (sm & 0x40)
        h.sreq = fake_id(f, p);
    send_hdr(f, p, &h, o->b + hlen, o->len > hlen ? o->len - hlen : 0, inorder);
}

void fe_op_forge(fe *f, fz_in *in)
{
    int32_t p = fe_peer_of(f, fz_u8(in));
    uint8_t payload[FE_PKT_MAX];
    wire_hdr h;
    int inorder = 0;
    memset(&h, 0, sizeof h);
    h.type = (uint8_t)(1 + fz_u8(in) % 15);
    h.flags = fz_u8(in);
    if (sequenced(h.type))
        h.seq = seq_by(f, in, p, fz_u8(in), &inorder);
    switch (h.type) {
    case QUAY_PKT_EAGER:
    case QUAY_PKT_RTS:
        h.ctx = fe_pick32(f, in);
        h.src = (int32_t)fe_pick32(f, in);
        h.tag = (int32_t)fe_pick32(f, in);
        h.sreq = fe_pick32(f, in);
        h.len = fe_pick64(f, in);
        h.key = fe_pick64(f, in);
        break;
    case QUAY_PKT_CTS:
        h.sreq = fe_pick32(f, in);
        h.rreq = fe_pick32(f, in);
        h.grant = fe_pick32(f, in);
        h.frag = fe_pick32(f, in);
        h.index = fe_pick32(f, in);
        h.len = fe_pick64(f, in);
        h.key = fe_pick64(f, in);
        break;
    case QUAY_PKT_DATA:
        h.rreq = fe_pick32(f, in);
        h.offset = fe_pick64(f, in);
        break;
    case QUAY_PKT_ACK:
    case QUAY_PKT_CANCEL_REP:
        h.sreq = fe_pick32(f, in);
        h.status = (int32_t)fe_pick32(f, in);
        break;
    case QUAY_PKT_CANCEL_REQ:
        h.ctx = fe_pick32(f, in);
        h.sreq = fe_pick32(f, in);
        h.target = fe_pick32(f, in);
        break;
    case QUAY_PKT_FIN:
        h.sreq = fe_pick32(f, in);
        h.rreq = fe_pick32(f, in);
        h.status = (int32_t)fe_pick32(f, in);
        break;
    case QUAY_PKT_RTR:
        h.ctx = fe_pick32(f, in);
        h.src = (int32_t)fe_pick32(f, in);
        h.tag = (int32_t)fe_pick32(f, in);
        h.rreq = fe_pick32(f, in);
        h.x = fe_pick32(f, in);
        h.len = fe_pick64(f, in);
        h.key = fe_pick64(f, in);
        break;
    case QUAY_PKT_SC:
        h.ctx = fe_pick32(f, in);
        h.src = (int32_t)fe_pick32(f, in);
        h.tag = (int32_t)fe_pick32(f, in);
        h.sreq = fe_pick32(f, in);
        h.rreq = fe_pick32(f, in);
        h.status = (int32_t)fe_pick32(f, in);
        h.len = fe_pick64(f, in);
        break;
    default: /* arbitration */
        h.ctx = fe_pick32(f, in);
        h.src = (int32_t)fe_pick32(f, in);
        h.tag = (int32_t)fe_pick32(f, in);
        h.rreq = fe_pick32(f, in);
        h.sreq = fe_pick32(f, in);
        h.slot = fe_pick32(f, in);
        h.len = fe_pick64(f, in);
        h.key = fe_pick64(f, in);
        break;
    }
    size_t plen = 0;
    if (h.type == QUAY_PKT_EAGER || h.type == QUAY_PKT_DATA) {
        uint8_t n = fz_u8(in);
        plen = h.type == QUAY_PKT_EAGER && h.len <= 1024 && !(n & 0x80) ? (size_t)h.len : n;
        fz_bytes(in, payload, plen > 64 ? 64 : plen);
        if (plen > 64)
            fe_pattern(payload + 64, plen - 64, n);
    }
    send_hdr(f, p, &h, payload, plen, inorder);
}

void fe_op_raw(fe *f, fz_in *in)
{
    int32_t p = (int32_t)(fz_u8(in) % (f->n + 1)); /* n: an out-of-range peer */
    uint8_t l = fz_u8(in);
    uint8_t body[256], b[256 + CHAN_FRAME_LEN];
    size_t n = (size_t)(l & 0x7f) * 2;
    fz_bytes(in, body, n);
    if (p == f->n) {
        offer(f, (l & 1) ? -1 : f->n, body, n, NULL);
        return;
    }
    if (fe_flow(f) && !(l & 0x80) && p != f->me) {
        uint16_t flags;
        uint32_t aux;
        frame_fields(f, p, &flags, &aux);
        size_t len = frame(f, p, b, 0, CHAN_DATA, flags, f->peers[p].chan_next++, f->peers[p].rx_hi,
                           aux, body, n);
        offer(f, p, b, len, NULL);
    } else {
        offer(f, p, body, n, NULL);
    }
}

void fe_op_replay(fe *f, fz_in *in)
{
    uint8_t k = fz_u8(in), how = fz_u8(in);
    if (f->nhist == 0)
        return;
    fe_hist *h = &f->hist[(f->histpos - 1 - (k % f->nhist) + 2 * FE_MAX_HIST) % FE_MAX_HIST];
    int32_t p = (how & 2) ? fe_peer_of(f, (uint8_t)(h->peer + 1)) : h->peer;
    size_t n = h->len;
    uint8_t *copy = malloc(n ? n : 1);
    if (copy == NULL)
        fz_fail("out of memory");
    memcpy(copy, h->b, n);
    if (p < 0 || p >= f->n) {
        free(copy);
        return;
    }
    if ((how & 1) || !fe_flow(f) || n < CHAN_FRAME_LEN)
        offer(f, p, copy, n, NULL);
    else
        deliver(f, p, copy + CHAN_FRAME_LEN, n - CHAN_FRAME_LEN);
    free(copy);
}

void fe_op_chan(fe *f, fz_in *in)
{
    int32_t p = fe_peer_of(f, fz_u8(in));
    uint8_t v = fz_u8(in);
    uint32_t val = fz_u32(in);
    uint8_t b[CHAN_FRAME_LEN + 64];
    uint16_t flags;
    uint32_t aux;
    fe_peer *pe = &f->peers[p];
    if (!fe_flow(f))
        return;
    frame_fields(f, p, &flags, &aux);
    switch (v % 8) {
    case 0: /* ACK */
        offer(f, p, b, frame(f, p, b, 0, CHAN_ACK, flags, 0, pe->rx_hi, aux, NULL, 0), NULL);
        break;
    case 1: { /* NACK: the newest frame (val & 3 more back) refused */
        uint32_t back = 1 + (val & 3), nack = pe->rx_hi >= back ? pe->rx_hi - back : 0;
        offer(f, p, b,
              frame(f, p, b, 0, CHAN_ACK, (uint16_t)(flags | CHAN_F_NACK), 0, nack,
                    f->cfg.flow == QUAY_FLOW_CREDIT ? aux : nack, NULL, 0),
              NULL);
        break;
    }
    case 2: /* PING */
        offer(f, p, b,
              frame(f, p, b, 0, CHAN_ACK, (uint16_t)(flags | CHAN_F_PING), 0, pe->rx_hi, aux, NULL,
                    0),
              NULL);
        break;
    case 3: /* a credit grant (or BLOCKED) */
        offer(f, p, b,
              frame(f, p, b, 0, CHAN_ACK, (uint16_t)(flags | ((v & 8) ? CHAN_F_BLOCKED : 0)), 0,
                    pe->rx_hi, pe->rx_hi + (val & 0xff), NULL, 0),
              NULL);
        break;
    case 4: /* a literal ack value */
        offer(f, p, b, frame(f, p, b, 0, CHAN_ACK, flags, 0, val, aux, NULL, 0), NULL);
        break;
    case 5:
        retransmit(f, p);
        break;
    case 6: /* for another channel */
        offer(f, p, b,
              frame(f, p, b, (int)((v >> 3) & 7), CHAN_ACK, flags, 0, (v & 0x40) ? val : 0, aux,
                    NULL, 0),
              NULL);
        break;
    default: { /* a DATA frame with a literal sequence number and a short body */
        uint8_t body[16];
        fz_bytes(in, body, sizeof body);
        offer(f, p, b, frame(f, p, b, 0, CHAN_DATA, flags, val, pe->rx_hi, aux, body, (v >> 3) % 17),
              NULL);
        break;
    }
    }
}