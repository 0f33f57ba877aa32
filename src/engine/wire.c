/*
 * wire.c — encode and decode quay packet headers.
 *
 * Discipline: the decoder checks the minimum length before any
 * read, reads fields with byte helpers (never a struct cast), compares as
 * `len - used < n` so nothing can wrap, and checks every field range it can
 * without engine state.
 */
#include "engine/wire.h"

#include <string.h>

static size_t hdr_len_of(uint8_t type, uint16_t flags)
{
    size_t key = (flags & WIRE_F_KEY) ? WIRE_KEY_LEN : 0;
    switch (type) {
    case QUAY_PKT_EAGER: return WIRE_ENV_LEN;
    case QUAY_PKT_RTS: return WIRE_ENV_LEN + key;
    case QUAY_PKT_CTS: return WIRE_CTS_LEN + key;
    case QUAY_PKT_FIN: return WIRE_FIN_LEN;
    case QUAY_PKT_RTR: return WIRE_RTR_LEN;
    case QUAY_PKT_SC: return WIRE_SC_LEN;
    case QUAY_PKT_ENA_ANY:
    case QUAY_PKT_ANY_FLAG:
    case QUAY_PKT_RTR_ANY:
    case QUAY_PKT_DISABLE_ANY: return WIRE_ANY_LEN;
    case QUAY_PKT_DATA: return WIRE_DATA_LEN;
    case QUAY_PKT_ACK: return WIRE_ACK_LEN;
    case QUAY_PKT_CANCEL_REQ: return WIRE_CANCEL_REQ_LEN;
    case QUAY_PKT_CANCEL_REP: return WIRE_CANCEL_REP_LEN;
    default: return 0;
    }
}

/* The arbitration packets share one layout; each type says which fields
 * it uses, and the rest must be zero. */
static int any_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    h->seq = wire_get32(b + 4);
    h->ctx = wire_get32(b + 8);
    h->src = (int32_t)wire_get32(b + 12);
    h->tag = (int32_t)wire_get32(b + 16);
    h->rreq = wire_get32(b + 20);
    h->sreq = wire_get32(b + 24);
    h->slot = wire_get32(b + 28);
    h->len = wire_get64(b + 32);
    h->key = wire_get64(b + 40);
    if (payload != 0 || h->src < 0)
        return -1;
    switch (h->type) {
    case QUAY_PKT_ENA_ANY: /* a pattern: tag or ANY_TAG */
        return h->flags != 0 || h->tag < QUAY_ANY_TAG || h->slot == 0 || h->rreq != 0 ||
                       h->sreq != 0 || h->len != 0 || h->key != 0
                   ? -1
                   : 0;
    case QUAY_PKT_ANY_FLAG: /* an envelope: a real tag, the send's length */
        return h->flags != 0 || h->tag < 0 || h->slot == 0 || h->sreq == 0 || h->rreq != 0 ||
                       h->key != 0
                   ? -1
                   : 0;
    case QUAY_PKT_RTR_ANY: /* the receive, its capacity and key */
        return h->flags != 0 || h->tag != 0 || h->rreq == 0 || h->sreq == 0 || h->slot != 0
                   ? -1
                   : 0;
    default: /* DISABLE_ANY: a flag's send (may drop) or none (drops) */
        return (h->flags & ~WIRE_F_DROP) || (h->sreq == 0 && h->flags != 0) || h->tag != 0 ||
                       h->slot == 0 || h->rreq != 0 || h->len != 0 || h->key != 0
                   ? -1
                   : 0;
    }
}

/* wire_decode; `more` admits WIRE_F_MORE on an EAGER (a train's message). */
static int decode(const uint8_t *b, size_t len, wire_hdr *h, uint16_t more);

int wire_decode(const uint8_t *b, size_t len, wire_hdr *h)
{
    return decode(b, len, h, 0);
}

int wire_decode_train(const uint8_t *b, size_t len, wire_hdr *h)
{
    return decode(b, len, h, WIRE_F_MORE);
}

int wire_piece_hdr(const uint8_t *piece, uint32_t seq, uint32_t ctx, int32_t src, wire_hdr *h)
{
    memset(h, 0, sizeof *h);
    h->type = QUAY_PKT_EAGER;
    h->seq = seq;
    h->ctx = ctx;
    h->src = src;
    h->tag = (int32_t)wire_get32(piece);
    h->len = wire_get32(piece + 4);
    return h->src < 0 || h->tag < 0 ? QUAY_EPROTO : WIRE_PIECE_LEN;
}

static int decode(const uint8_t *b, size_t len, wire_hdr *h, uint16_t more)
{
    if (b == NULL || len < 4)
        return QUAY_EPROTO;
    if (b[0] != WIRE_VERSION)
        return QUAY_EPROTO;
    memset(h, 0, sizeof *h); /* fields a type does not carry read as 0 */
    h->type = b[1];
    h->flags = wire_get16(b + 2);
    size_t hl = hdr_len_of(h->type, h->flags);
    if (hl == 0 || len < hl)
        return QUAY_EPROTO;
    size_t payload = len - hl;
    switch (h->type) {
    case QUAY_PKT_EAGER:
    case QUAY_PKT_RTS:
        if ((h->flags & ~(h->type == QUAY_PKT_RTS ? WIRE_RTS_FLAGS : WIRE_ENV_FLAGS | more)) ||
            (h->flags & WIRE_ENV_FLAGS) == WIRE_ENV_FLAGS)
            return QUAY_EPROTO; /* unknown bits, or sync and ready at once */
        h->seq = wire_get32(b + 4);
        h->ctx = wire_get32(b + 8);
        h->src = (int32_t)wire_get32(b + 12);
        h->tag = (int32_t)wire_get32(b + 16);
        h->sreq = wire_get32(b + 20);
        h->len = wire_get64(b + 24);
        if (h->src < 0 || h->tag < 0)
            return QUAY_EPROTO;
        if (h->type == QUAY_PKT_EAGER ? h->len != payload : payload != 0)
            return QUAY_EPROTO;
        /* Only sync/ready sends need a reply addressed to a request. */
        if ((h->flags & WIRE_ENV_FLAGS) && h->sreq == 0)
            return QUAY_EPROTO;
        if (h->type == QUAY_PKT_RTS && h->sreq == 0)
            return QUAY_EPROTO;
        h->key = (h->flags & WIRE_F_KEY) ? wire_get64(b + WIRE_ENV_LEN) : 0;
        return (int)hl;
    case QUAY_PKT_CTS:
        if ((h->flags & ~WIRE_F_KEY) || payload != 0)
            return QUAY_EPROTO;
        h->sreq = wire_get32(b + 4);
        h->rreq = wire_get32(b + 8);
        h->grant = wire_get32(b + 12);
        h->frag = wire_get32(b + 16);
        h->index = wire_get32(b + 20);
        h->len = wire_get64(b + 24);
        if (h->sreq == 0 || h->rreq == 0 || h->frag == 0 || h->index == 0)
            return QUAY_EPROTO;
        h->key = (h->flags & WIRE_F_KEY) ? wire_get64(b + WIRE_CTS_LEN) : 0;
        return (int)hl;
    case QUAY_PKT_FIN:
        if ((h->flags & ~WIRE_F_TO_RECV) || payload != 0)
            return QUAY_EPROTO;
        h->sreq = wire_get32(b + 4);
        h->rreq = wire_get32(b + 8);
        h->status = (int32_t)wire_get32(b + 12);
        if (h->sreq == 0 || h->rreq == 0 ||
            (h->status != 0 && h->status != QUAY_EPEER && h->status != QUAY_EPROTO &&
             h->status != QUAY_ESTATE))
            return QUAY_EPROTO;
        return (int)hl;
    case QUAY_PKT_RTR:
        if ((h->flags & ~(WIRE_F_REVOKE | WIRE_F_CANCEL)) ||
            h->flags == (WIRE_F_REVOKE | WIRE_F_CANCEL) || payload != 0)
            return QUAY_EPROTO;
        h->seq = wire_get32(b + 4);
        h->ctx = wire_get32(b + 8);
        h->src = (int32_t)wire_get32(b + 12);
        h->tag = (int32_t)wire_get32(b + 16);
        h->rreq = wire_get32(b + 20);
        h->x = wire_get32(b + 24);
        h->len = wire_get64(b + 32);
        h->key = wire_get64(b + 40);
        h->sreq = 0;
        /* A revoke or cancel names the delegation by rreq alone. */
        if (h->src < 0 || h->tag < QUAY_ANY_TAG || h->rreq == 0 || wire_get32(b + 28) != 0 ||
            (h->flags != 0 && (h->x != 0 || h->len != 0 || h->key != 0)))
            return QUAY_EPROTO;
        return (int)hl;
    case QUAY_PKT_SC:
        if (h->flags != 0 || payload != 0)
            return QUAY_EPROTO;
        h->seq = wire_get32(b + 4);
        h->ctx = wire_get32(b + 8);
        h->src = (int32_t)wire_get32(b + 12);
        h->tag = (int32_t)wire_get32(b + 16);
        h->sreq = wire_get32(b + 20);
        h->rreq = wire_get32(b + 24);
        h->status = (int32_t)wire_get32(b + 28);
        h->len = wire_get64(b + 32);
        if (h->src < 0 || h->tag < 0 || h->sreq == 0 || h->rreq == 0 ||
            (h->status != 0 && h->status != QUAY_EPEER && h->status != QUAY_EPROTO &&
             h->status != QUAY_ESTATE))
            return QUAY_EPROTO;
        return (int)hl;
    case QUAY_PKT_ENA_ANY:
    case QUAY_PKT_ANY_FLAG:
    case QUAY_PKT_RTR_ANY:
    case QUAY_PKT_DISABLE_ANY:
        return any_decode(b, payload, h) == 0 ? (int)hl : QUAY_EPROTO;
    case QUAY_PKT_DATA:
        if (h->flags != 0 || payload == 0)
            return QUAY_EPROTO;
        h->rreq = wire_get32(b + 4);
        h->offset = wire_get64(b + 8);
        if (h->rreq == 0)
            return QUAY_EPROTO;
        return (int)hl;
    case QUAY_PKT_ACK:
        if (h->flags != 0 || payload != 0)
            return QUAY_EPROTO;
        h->sreq = wire_get32(b + 4);
        h->status = (int32_t)wire_get32(b + 8);
        if (h->sreq == 0 || (h->status != 0 && h->status != QUAY_ENOTPOSTED))
            return QUAY_EPROTO;
        return (int)hl;
    case QUAY_PKT_CANCEL_REQ:
        if (h->flags != 0 || payload != 0)
            return QUAY_EPROTO;
        h->seq = wire_get32(b + 4);
        h->ctx = wire_get32(b + 8);
        h->sreq = wire_get32(b + 12);
        h->target = wire_get32(b + 16);
        if (h->sreq == 0)
            return QUAY_EPROTO;
        return (int)hl;
    case QUAY_PKT_CANCEL_REP:
        if ((h->flags & ~WIRE_F_FOR_RECV) || payload != 0)
            return QUAY_EPROTO;
        h->sreq = wire_get32(b + 4);
        h->status = (int32_t)wire_get32(b + 8);
        if (h->sreq == 0 || (h->status != 0 && h->status != 1))
            return QUAY_EPROTO;
        return (int)hl;
    default:
        return QUAY_EPROTO;
    }
}

size_t wire_encode(const wire_hdr *h, uint8_t *o)
{
    size_t hl = hdr_len_of(h->type, h->flags);
    memset(o, 0, hl);
    o[0] = WIRE_VERSION;
    o[1] = h->type;
    wire_put16(o + 2, h->flags);
    switch (h->type) {
    case QUAY_PKT_EAGER:
    case QUAY_PKT_RTS:
        wire_put32(o + 4, h->seq);
        wire_put32(o + 8, h->ctx);
        wire_put32(o + 12, (uint32_t)h->src);
        wire_put32(o + 16, (uint32_t)h->tag);
        wire_put32(o + 20, h->sreq);
        wire_put64(o + 24, h->len);
        if (h->flags & WIRE_F_KEY)
            wire_put64(o + WIRE_ENV_LEN, h->key);
        break;
    case QUAY_PKT_CTS:
        wire_put32(o + 4, h->sreq);
        wire_put32(o + 8, h->rreq);
        wire_put32(o + 12, h->grant);
        wire_put32(o + 16, h->frag);
        wire_put32(o + 20, h->index);
        wire_put64(o + 24, h->len);
        if (h->flags & WIRE_F_KEY)
            wire_put64(o + WIRE_CTS_LEN, h->key);
        break;
    case QUAY_PKT_FIN:
        wire_put32(o + 4, h->sreq);
        wire_put32(o + 8, h->rreq);
        wire_put32(o + 12, (uint32_t)h->status);
        break;
    case QUAY_PKT_RTR:
        wire_put32(o + 4, h->seq);
        wire_put32(o + 8, h->ctx);
        wire_put32(o + 12, (uint32_t)h->src);
        wire_put32(o + 16, (uint32_t)h->tag);
        wire_put32(o + 20, h->rreq);
        wire_put32(o + 24, h->x);
        wire_put64(o + 32, h->len);
        wire_put64(o + 40, h->key);
        break;
    case QUAY_PKT_SC:
        wire_put32(o + 4, h->seq);
        wire_put32(o + 8, h->ctx);
        wire_put32(o + 12, (uint32_t)h->src);
        wire_put32(o + 16, (uint32_t)h->tag);
        wire_put32(o + 20, h->sreq);
        wire_put32(o + 24, h->rreq);
        wire_put32(o + 28, (uint32_t)h->status);
        wire_put64(o + 32, h->len);
        break;
    case QUAY_PKT_ENA_ANY:
    case QUAY_PKT_ANY_FLAG:
    case QUAY_PKT_RTR_ANY:
    case QUAY_PKT_DISABLE_ANY:
        wire_put32(o + 4, h->seq);
        wire_put32(o + 8, h->ctx);
        wire_put32(o + 12, (uint32_t)h->src);
        wire_put32(o + 16, (uint32_t)h->tag);
        wire_put32(o + 20, h->rreq);
        wire_put32(o + 24, h->sreq);
        wire_put32(o + 28, h->slot);
        wire_put64(o + 32, h->len);
        wire_put64(o + 40, h->key);
        break;
    case QUAY_PKT_DATA:
        wire_put32(o + 4, h->rreq);
        wire_put64(o + 8, h->offset);
        break;
    case QUAY_PKT_ACK:
    case QUAY_PKT_CANCEL_REP:
        wire_put32(o + 4, h->sreq);
        wire_put32(o + 8, (uint32_t)h->status);
        break;
    case QUAY_PKT_CANCEL_REQ:
        wire_put32(o + 4, h->seq);
        wire_put32(o + 8, h->ctx);
        wire_put32(o + 12, h->sreq);
        wire_put32(o + 16, h->target);
        break;
    default:
        return 0;
    }
    return hl;
}
