/*
 * wire.c — decode and encode quay packet headers: the common header here,
 * the fields behind it by each type's decoder and encoder (its protocol's
 * file), found through the registry (packets.h).
 *
 * Discipline: the decoder checks the minimum length before any
 * read, reads fields with byte helpers (never a struct cast), compares as
 * `len - used < n` so nothing can wrap, and checks every field range it can
 * without engine state.
 */
#include "engine/internal.h"

#include <string.h>

/* A header's length by its type and flags (0: not a type). */
static size_t hdr_len_of(const pkt_type *t, uint16_t flags)
{
    return t->hlen + ((t->props & PK_KEY_EXT) && (flags & WIRE_F_KEY) ? WIRE_KEY_LEN : 0);
}

/* wire_decode; `more` admits WIRE_F_MORE on a type that heads trains. */
static int decode(const uint8_t *b, size_t len, wire_hdr *h, uint16_t more);

int wire_decode(const uint8_t *b, size_t len, wire_hdr *h)
{
    return decode(b, len, h, 0);
}

int wire_decode_train(const uint8_t *b, size_t len, wire_hdr *h)
{
    return decode(b, len, h, WIRE_F_MORE);
}

static int decode(const uint8_t *b, size_t len, wire_hdr *h, uint16_t more)
{
    if (b == NULL || len < WIRE_COMMON_LEN)
        return QUAY_EPROTO;
    if (wire_version(b) != WIRE_VERSION)
        return QUAY_EPROTO;
    memset(h, 0, sizeof *h); /* fields a type does not carry read as 0 */
    h->type = wire_type(b);
    h->flags = wire_flags(b);
    const pkt_type *t = pkt_info(h->type);
    size_t hl = hdr_len_of(t, h->flags);
    if (hl == 0 || len < hl)
        return QUAY_EPROTO; /* an unknown type, or short of its header */
    size_t payload = len - hl;
    uint16_t flags_ok = t->flags | ((t->props & PK_TRAIN) ? more : 0);
    if ((h->flags & ~flags_ok) || (payload != 0 && !(t->props & PK_PAYLOAD)))
        return QUAY_EPROTO; /* a flag bit its type lacks; bytes it cannot carry */
    return t->decode(b, payload, h) == 0 ? (int)hl : QUAY_EPROTO;
}

size_t wire_encode(const wire_hdr *h, uint8_t *o)
{
    const pkt_type *t = pkt_info(h->type);
    size_t hl = hdr_len_of(t, h->flags);
    memset(o, 0, hl);
    wire_put_common(o, h->type, h->flags);
    if (t->encode == NULL)
        return 0; /* not a type */
    t->encode(h, o);
    return hl;
}
