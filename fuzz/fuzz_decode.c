/*
 * fuzz_decode.c — the wire decoder (src/engine/wire.c) on raw bytes.
 *
 * Input: the bytes of one packet, as quay_on_packet would get them
 * (engine header and payload; no channel frame). The whole input and
 * each of its first prefixes (truncations) are decoded, every one from an
 * exact-size heap copy (ASan catches a read past the end). Invariants:
 *   - wire_decode returns QUAY_EPROTO or a header length hl with
 *     0 < hl <= len and hl <= QUAY_MAX_HEADER;
 *   - an accepted header re-encodes (wire_encode) to exactly the bytes
 *     it was decoded from, and decoding those gives the same header;
 *   - the payload length agrees with the type: EAGER len == payload,
 *     DATA payload > 0, every other type none;
 *   - decoding is deterministic (a second decode gives the same answer);
 *   - quay_strerror, quay_err_is_fatal, quay_state_name and quay_pkt_name
 *     answer (never NULL) for any value the first bytes make.
 */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "engine/wire.h"

/* Longest input looked at, and how many prefixes are decoded too. */
#define DEC_MAX_INPUT 4096
#define DEC_PREFIXES 80

static int same_hdr(const wire_hdr *a, const wire_hdr *b)
{
    return a->type == b->type && a->flags == b->flags && a->seq == b->seq &&
           a->ctx == b->ctx && a->src == b->src && a->tag == b->tag && a->sreq == b->sreq &&
           a->rreq == b->rreq && a->len == b->len && a->offset == b->offset &&
           a->grant == b->grant && a->frag == b->frag && a->index == b->index &&
           a->status == b->status && a->target == b->target && a->key == b->key &&
           a->x == b->x && a->slot == b->slot;
}

static void decode_one(const uint8_t *src, size_t len)
{
    uint8_t *b = malloc(len ? len : 1);
    uint8_t again[QUAY_MAX_HEADER];
    wire_hdr h, h2, h3;
    int rc, rc2;
    if (b == NULL)
        fz_fail("out of memory");
    if (len != 0)
        memcpy(b, src, len);
    memset(&h, 0, sizeof h);
    memset(&h2, 0, sizeof h2);
    rc = wire_decode(b, len, &h);
    rc2 = wire_decode(b, len, &h2);
    if (rc != rc2 || (rc > 0 && !same_hdr(&h, &h2)))
        fz_fail("decode of %zu bytes not deterministic (%d then %d)", len, rc, rc2);
    if (rc == QUAY_EPROTO) {
        free(b);
        return;
    }
    if (rc <= 0 || (size_t)rc > len || rc > QUAY_MAX_HEADER)
        fz_fail("wire_decode(%zu bytes) returned %d", len, rc);
    {
        size_t hl = (size_t)rc, plen = len - hl, el;
        if (h.type == QUAY_PKT_EAGER ? h.len != plen
                                     : (h.type == QUAY_PKT_DATA ? plen == 0 : plen != 0))
            fz_fail("type %u accepted with %zu payload bytes (len field %llu)", h.type, plen,
                    (unsigned long long)h.len);
        memset(again, 0xEE, sizeof again);
        el = wire_encode(&h, again);
        if (el != hl || memcmp(again, b, hl) != 0)
            fz_fail("type %u: %zu-byte header re-encodes to %zu different bytes", h.type, hl,
                    el);
        /* The header alone: a payload-carrying type now lacks its payload. */
        int bare = (h.type == QUAY_PKT_EAGER && h.len != 0) || h.type == QUAY_PKT_DATA;
        memset(&h3, 0, sizeof h3);
        if (wire_decode(again, hl, &h3) != (bare ? QUAY_EPROTO : rc) ||
            (!bare && !same_hdr(&h, &h3)))
            fz_fail("type %u: the re-encoded header decodes differently", h.type);
    }
    free(b);
}

/* The names of codes, states and packet types are total functions. */
static void names(const uint8_t *data, size_t size)
{
    int32_t code = 0;
    if (size >= 4)
        code = (int32_t)((uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                         (uint32_t)data[3] << 24);
    for (int64_t k = 0; k < 3 && (int64_t)code - k >= INT32_MIN; k++) {
        int32_t c = (int32_t)((int64_t)code - k);
        int fatal = quay_err_is_fatal(c);
        if (quay_strerror(c) == NULL || fatal != (c <= QUAY_ERR_FATAL))
            fz_fail("quay_strerror / quay_err_is_fatal(%d)", c);
        if (quay_state_name(c) == NULL || quay_pkt_name(c) == NULL)
            fz_fail("quay_state_name / quay_pkt_name(%d)", c);
    }
    for (int c = 0; c < 4 && (size_t)c < size; c++)
        if (quay_strerror(-(int)data[c]) == NULL || quay_pkt_name(data[c]) == NULL ||
            quay_state_name(data[c]) == NULL || quay_strerror(-200 - (int)data[c]) == NULL ||
            quay_strerror(-500 - (int)data[c]) == NULL)
            fz_fail("a name is NULL");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_harness = "fuzz_decode";
    if (size > DEC_MAX_INPUT)
        size = DEC_MAX_INPUT;
    names(data, size);
    decode_one(data, size);
    for (size_t k = 0; k < size && k < DEC_PREFIXES; k++)
        decode_one(data, k);
    return 0;
}
