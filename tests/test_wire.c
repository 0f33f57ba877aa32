/*
 * test_wire.c — the wire codec (src/engine/wire.c, docs/wire.md).
 *
 *   - byte layout of every packet type at its documented offsets;
 *   - encode/decode round trip for every type with boundary values;
 *   - every syntax rule of docs/wire.md rejected with QUAY_EPROTO;
 *   - a seeded random test: 100,000 random byte strings and 100,000
 *     single-byte mutations / truncations / extensions of valid packets.
 *     The decoder's verdict must equal an independent reading of
 *     docs/wire.md (spec_check below), it must never read outside the
 *     exact-size heap buffer it is given (ASan), and every accepted header
 *     must re-encode to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/wire.h"
#include "harness.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
/* A type number no longer used (UNA_ANY: a sender declining a claim,
 * retired when a claim became the match): malformed, like any unknown. */
#define RETIRED_TYPE 14

/* ---- helpers ------------------------------------------------------------ */

/* Deterministic xorshift64*: same seed, same run. */
typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545f4914f6cdd1dull;
}

static uint32_t rng_below(rng *r, uint32_t n) { return (uint32_t)(rng_next(r) % n); }

/* Independent little-endian readers (not wire.h's helpers). */
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* Header length per type and flags as docs/wire.md states it; 0 for
 * unknown. RTS and CTS carry an 8-byte key after byte 32 with flag 0x4. */
static size_t spec_hl_f(uint8_t type, unsigned flags)
{
    switch (type) {
    case QUAY_PKT_EAGER: return 32;
    case QUAY_PKT_RTS:
    case QUAY_PKT_CTS: return (flags & 4u) ? 40 : 32;
    case QUAY_PKT_DATA: return 16;
    case QUAY_PKT_ACK: return 12;
    case QUAY_PKT_CANCEL_REQ: return 20;
    case QUAY_PKT_CANCEL_REP: return 12;
    case QUAY_PKT_FIN: return 16;
    case QUAY_PKT_RTR: return 48;
    case QUAY_PKT_SC: return 40;
    case QUAY_PKT_ENA_ANY:
    case QUAY_PKT_ANY_FLAG:
    case QUAY_PKT_RTR_ANY:
    case QUAY_PKT_DISABLE_ANY: return 48;
    default: return 0;
    }
}

static size_t spec_hl(uint8_t type) { return spec_hl_f(type, 0); }

/* The arbitration packets' field table in docs/wire.md: per type, which of
 * the shared fields must be 0 (FZ), non-zero (FN) or may be anything (FA),
 * the tag rule and the flag bits. */
enum { FZ, FN, FA };
enum { TAG_PATTERN, TAG_REAL, TAG_ZERO }; /* >= -1, >= 0, == 0 */
typedef struct any_rule {
    uint8_t type;
    unsigned flags; /* bits allowed */
    int tag, rreq, sreq, slot, len, key;
} any_rule;
static const any_rule ANY_RULES[] = {
    /*                        flags tag          rreq sreq slot len key */
    {QUAY_PKT_ENA_ANY,      0, TAG_PATTERN, FZ, FZ, FN, FZ, FZ},
    {QUAY_PKT_ANY_FLAG,     0, TAG_REAL,    FZ, FN, FN, FA, FZ},
    {QUAY_PKT_RTR_ANY,      0, TAG_ZERO,    FN, FN, FZ, FA, FA},
    {QUAY_PKT_DISABLE_ANY,  1, TAG_ZERO,    FZ, FA, FN, FZ, FZ}, /* DROP 0x1 only with sreq */
};

static const any_rule *any_rule_of(uint8_t type)
{
    for (size_t i = 0; i < sizeof ANY_RULES / sizeof ANY_RULES[0]; i++)
        if (ANY_RULES[i].type == type)
            return &ANY_RULES[i];
    return NULL;
}

static int field_ok(int rule, uint64_t v) { return rule == FA || (rule == FZ ? v == 0 : v != 0); }

/*
 * docs/wire.md as a predicate: the header length if the packet must be
 * accepted, -1 if it must be rejected.
 */
static int spec_check(const uint8_t *b, size_t len)
{
    if (len < 4 || b[0] != 1)
        return -1;
    unsigned flags = (unsigned)b[2] | (unsigned)b[3] << 8;
    size_t hl = spec_hl_f(b[1], flags);
    if (hl == 0 || len < hl)
        return -1;
    size_t pl = len - hl;
    switch (b[1]) {
    case QUAY_PKT_EAGER:
    case QUAY_PKT_RTS: {
        /* EAGER: sync 0x1, ready 0x2; RTS also key 0x4, put-ok 0x8. */
        unsigned known = b[1] == QUAY_PKT_RTS ? 0xFu : 3u;
        if ((flags & ~known) || (flags & 3u) == 3u) /* unknown bits; sync and ready */
            return -1;
        if ((int32_t)le32(b + 12) < 0 || (int32_t)le32(b + 16) < 0)
            return -1;
        uint32_t sreq = le32(b + 20);
        uint64_t mlen = le64(b + 24);
        if (b[1] == QUAY_PKT_EAGER ? mlen != pl : pl != 0)
            return -1;
        if ((b[1] == QUAY_PKT_RTS || (flags & 3u) != 0) && sreq == 0)
            return -1;
        return (int)hl;
    }
    case QUAY_PKT_CTS:
        if ((flags & ~4u) || pl)
            return -1;
        if (!le32(b + 4) || !le32(b + 8) || !le32(b + 16) || !le32(b + 20))
            return -1;
        return (int)hl;
    case QUAY_PKT_DATA:
        if (flags || pl == 0 || le32(b + 4) == 0)
            return -1;
        return (int)hl;
    case QUAY_PKT_ACK: {
        if (flags || pl || le32(b + 4) == 0)
            return -1;
        int32_t st = (int32_t)le32(b + 8);
        return st == 0 || st == QUAY_ENOTPOSTED ? (int)hl : -1;
    }
    case QUAY_PKT_CANCEL_REQ:
        if (flags || pl || le32(b + 12) == 0)
            return -1;
        return (int)hl;
    case QUAY_PKT_CANCEL_REP: {
        if ((flags & ~1u) || pl || le32(b + 4) == 0) /* 0x1: for a receive */
            return -1;
        int32_t st = (int32_t)le32(b + 8);
        return st == 0 || st == 1 ? (int)hl : -1;
    }
    case QUAY_PKT_FIN: {
        if ((flags & ~1u) || pl || le32(b + 4) == 0 || le32(b + 8) == 0)
            return -1;
        int32_t st = (int32_t)le32(b + 12);
        return st == 0 || st == QUAY_EPEER || st == QUAY_EPROTO || st == QUAY_ESTATE ? (int)hl
                                                                                   : -1;
    }
    case QUAY_PKT_RTR: {
        /* revoke 0x1, cancel 0x2 (not both); they carry no x, cap, key */
        if ((flags & ~3u) || flags == 3u || pl)
            return -1;
        if ((int32_t)le32(b + 12) < 0 || (int32_t)le32(b + 16) < -1 || le32(b + 20) == 0 ||
            le32(b + 28) != 0)
            return -1;
        if (flags && (le32(b + 24) || le64(b + 32) || le64(b + 40)))
            return -1;
        return (int)hl;
    }
    case QUAY_PKT_SC: {
        if (flags || pl || (int32_t)le32(b + 12) < 0 || (int32_t)le32(b + 16) < 0 ||
            le32(b + 20) == 0 || le32(b + 24) == 0)
            return -1;
        int32_t st = (int32_t)le32(b + 28);
        return st == 0 || st == QUAY_EPEER || st == QUAY_EPROTO || st == QUAY_ESTATE ? (int)hl
                                                                                   : -1;
    }
    case QUAY_PKT_ENA_ANY:
    case QUAY_PKT_ANY_FLAG:
    case QUAY_PKT_RTR_ANY:
    case QUAY_PKT_DISABLE_ANY: {
        /* seq 4, ctx 8, src 12, tag 16, rreq 20, sreq 24, slot 28, len 32, key 40 */
        const any_rule *ru = any_rule_of(b[1]);
        int32_t tag = (int32_t)le32(b + 16);
        uint32_t sreq = le32(b + 24);
        if ((flags & ~ru->flags) || (flags != 0 && sreq == 0) || pl ||
            (int32_t)le32(b + 12) < 0)
            return -1;
        if (ru->tag == TAG_PATTERN ? tag < -1 : ru->tag == TAG_REAL ? tag < 0 : tag != 0)
            return -1;
        if (!field_ok(ru->rreq, le32(b + 20)) || !field_ok(ru->sreq, sreq) ||
            !field_ok(ru->slot, le32(b + 28)) || !field_ok(ru->len, le64(b + 32)) ||
            !field_ok(ru->key, le64(b + 40)))
            return -1;
        return (int)hl;
    }
    default: return -1;
    }
}

/* Decode bytes from an exact-size heap copy (so ASan sees any over-read)
 * into a heap wire_hdr (so it sees any over-write). */
static int decode_exact(const uint8_t *b, size_t len, wire_hdr *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    wire_hdr *h = malloc(sizeof *h);
    if (copy == NULL || h == NULL)
        abort();
    if (len)
        memcpy(copy, b, len);
    memset(h, 0xa5, sizeof *h);
    int rc = wire_decode(copy, len, h);
    if (out)
        *out = *h;
    free(copy);
    free(h);
    return rc;
}

/* Build a packet: header by wire_encode + payload. Returns total length. */
static size_t build(const wire_hdr *h, const void *payload, size_t plen,
                    uint8_t *out, size_t cap)
{
    uint8_t hdr[QUAY_MAX_HEADER];
    size_t hl = wire_encode(h, hdr);
    if (hl + plen > cap)
        abort();
    memcpy(out, hdr, hl);
    if (plen)
        memcpy(out + hl, payload, plen);
    return hl + plen;
}

static wire_hdr hdr_of(uint8_t type)
{
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = type;
    return h;
}

/* The fields a type carries are equal in a and b. */
static int same_fields(const wire_hdr *a, const wire_hdr *b)
{
    if (a->type != b->type || a->flags != b->flags)
        return 0;
    switch (a->type) {
    case QUAY_PKT_EAGER:
    case QUAY_PKT_RTS:
        return a->seq == b->seq && a->ctx == b->ctx && a->src == b->src &&
               a->tag == b->tag && a->sreq == b->sreq && a->len == b->len &&
               (!(a->flags & WIRE_F_KEY) || a->key == b->key);
    case QUAY_PKT_CTS:
        return a->sreq == b->sreq && a->rreq == b->rreq && a->grant == b->grant &&
               a->frag == b->frag && a->index == b->index && a->len == b->len &&
               (!(a->flags & WIRE_F_KEY) || a->key == b->key);
    case QUAY_PKT_FIN:
        return a->sreq == b->sreq && a->rreq == b->rreq && a->status == b->status;
    case QUAY_PKT_RTR:
        return a->seq == b->seq && a->ctx == b->ctx && a->src == b->src && a->tag == b->tag &&
               a->rreq == b->rreq && a->x == b->x && a->len == b->len && a->key == b->key;
    case QUAY_PKT_SC:
        return a->seq == b->seq && a->ctx == b->ctx && a->src == b->src && a->tag == b->tag &&
               a->sreq == b->sreq && a->rreq == b->rreq && a->status == b->status &&
               a->len == b->len;
    case QUAY_PKT_ENA_ANY:
    case QUAY_PKT_ANY_FLAG:
    case QUAY_PKT_RTR_ANY:
    case QUAY_PKT_DISABLE_ANY:
        return a->seq == b->seq && a->ctx == b->ctx && a->src == b->src && a->tag == b->tag &&
               a->rreq == b->rreq && a->sreq == b->sreq && a->slot == b->slot &&
               a->len == b->len && a->key == b->key;
    case QUAY_PKT_DATA: return a->rreq == b->rreq && a->offset == b->offset;
    case QUAY_PKT_ACK:
    case QUAY_PKT_CANCEL_REP: return a->sreq == b->sreq && a->status == b->status;
    case QUAY_PKT_CANCEL_REQ:
        return a->seq == b->seq && a->ctx == b->ctx && a->sreq == b->sreq &&
               a->target == b->target;
    default: return 0;
    }
}

/* Round trip h (+ payload): decode gives the header length and the same
 * fields, re-encoding the decoded header gives the same bytes. */
static int roundtrip(const wire_hdr *h, const void *payload, size_t plen,
                     const char *what)
{
    static uint8_t pkt[QUAY_MAX_HEADER + 512];
    size_t n = build(h, payload, plen, pkt, sizeof pkt);
    size_t hl = spec_hl_f(h->type, h->flags);
    wire_hdr d;
    int rc = decode_exact(pkt, n, &d);
    int pass = rc == (int)hl && same_fields(h, &d);
    if (pass) {
        uint8_t again[QUAY_MAX_HEADER];
        pass = wire_encode(&d, again) == hl && memcmp(again, pkt, hl) == 0;
    }
    return ok_msg(pass, "round trip %s (rc %d, header %zu)", what, rc, hl);
}

/* ---- layout ---------------------------------------------------------------- */

static void t_lengths(void)
{
    static const struct {
        uint8_t type;
        size_t len;
    } want[] = {
        {QUAY_PKT_EAGER, WIRE_ENV_LEN},  {QUAY_PKT_RTS, WIRE_ENV_LEN},
        {QUAY_PKT_CTS, WIRE_CTS_LEN},    {QUAY_PKT_DATA, WIRE_DATA_LEN},
        {QUAY_PKT_ACK, WIRE_ACK_LEN},    {QUAY_PKT_CANCEL_REQ, WIRE_CANCEL_REQ_LEN},
        {QUAY_PKT_CANCEL_REP, WIRE_CANCEL_REP_LEN}, {QUAY_PKT_FIN, WIRE_FIN_LEN},
        {QUAY_PKT_RTR, WIRE_RTR_LEN},    {QUAY_PKT_SC, WIRE_SC_LEN},
        {QUAY_PKT_ENA_ANY, WIRE_ANY_LEN}, {QUAY_PKT_ANY_FLAG, WIRE_ANY_LEN},
        {QUAY_PKT_RTR_ANY, WIRE_ANY_LEN}, {QUAY_PKT_DISABLE_ANY, WIRE_ANY_LEN},
    };
    for (size_t i = 0; i < COUNT_OF(want); i++) {
        uint8_t out[QUAY_MAX_HEADER];
        wire_hdr h = hdr_of(want[i].type);
        ok_msg(wire_encode(&h, out) == want[i].len &&
                   want[i].len == spec_hl(want[i].type) &&
                   want[i].len <= QUAY_MAX_HEADER,
               "%s header is %zu bytes", quay_pkt_name(want[i].type), want[i].len);
        ok_msg(out[0] == WIRE_VERSION && out[1] == want[i].type,
               "%s starts with version and type", quay_pkt_name(want[i].type));
    }
    /* A key makes RTS and CTS 8 bytes longer. */
    static const uint8_t keyed[] = {QUAY_PKT_RTS, QUAY_PKT_CTS};
    for (size_t i = 0; i < COUNT_OF(keyed); i++) {
        uint8_t out[QUAY_MAX_HEADER];
        wire_hdr h = hdr_of(keyed[i]);
        h.flags = WIRE_F_KEY;
        ok_msg(wire_encode(&h, out) == 40 && spec_hl_f(keyed[i], WIRE_F_KEY) == 40,
               "%s with a key is 40 bytes", quay_pkt_name(keyed[i]));
    }
    /* Unknown types encode to nothing. */
    static const uint8_t bad[] = {0, 16, 17, 255};
    for (size_t i = 0; i < COUNT_OF(bad); i++) {
        uint8_t out[QUAY_MAX_HEADER];
        wire_hdr h = hdr_of(bad[i]);
        is_size(wire_encode(&h, out), 0);
    }
}

/* Every field at its documented offset, little-endian. */
static void t_layout(void)
{
    uint8_t out[QUAY_MAX_HEADER];
    wire_hdr h;

    h = hdr_of(QUAY_PKT_EAGER);
    h.flags = WIRE_F_SYNC;
    h.seq = 0x04030201u;
    h.ctx = 0x08070605u;
    h.src = 0x0c0b0a09;
    h.tag = 0x100f0e0d;
    h.sreq = 0x14131211u;
    h.len = 0x1c1b1a1918171615ull;
    is_size(wire_encode(&h, out), 32);
    static const uint8_t eager[32] = {
        1, 1, 1, 0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
        0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c};
    ok(memcmp(out, eager, 32) == 0);

    h.type = QUAY_PKT_RTS;
    h.flags = WIRE_F_READY;
    wire_encode(&h, out);
    ok(out[1] == 2 && out[2] == 2 && out[3] == 0 && memcmp(out + 4, eager + 4, 28) == 0);

    h = hdr_of(QUAY_PKT_CTS);
    h.sreq = 0x04030201u;
    h.rreq = 0x08070605u;
    h.grant = 0x0c0b0a09u;
    h.frag = 0x100f0e0du;
    h.index = 0x14131211u;
    h.len = 0x1c1b1a1918171615ull;
    is_size(wire_encode(&h, out), 32);
    ok(out[1] == 3 && out[2] == 0 && out[3] == 0 && memcmp(out + 4, eager + 4, 28) == 0);

    h = hdr_of(QUAY_PKT_DATA);
    h.rreq = 0x04030201u;
    h.offset = 0x0c0b0a0908070605ull;
    is_size(wire_encode(&h, out), 16);
    ok(out[1] == 4 && memcmp(out + 4, eager + 4, 12) == 0);

    h = hdr_of(QUAY_PKT_ACK);
    h.sreq = 0x04030201u;
    h.status = QUAY_ENOTPOSTED;
    is_size(wire_encode(&h, out), 12);
    ok(out[1] == 5 && le32(out + 4) == 0x04030201u &&
       (int32_t)le32(out + 8) == QUAY_ENOTPOSTED);

    h = hdr_of(QUAY_PKT_CANCEL_REQ);
    h.seq = 0x04030201u;
    h.ctx = 0x08070605u;
    h.sreq = 0x0c0b0a09u;
    h.target = 0x100f0e0du;
    is_size(wire_encode(&h, out), 20);
    ok(out[1] == 6 && memcmp(out + 4, eager + 4, 16) == 0);

    h = hdr_of(QUAY_PKT_CANCEL_REP);
    h.sreq = 0x04030201u;
    h.status = 1;
    is_size(wire_encode(&h, out), 12);
    ok(out[1] == 7 && le32(out + 4) == 0x04030201u && le32(out + 8) == 1);

    /* RTS with a key (GET offer): the key at 32. */
    h = hdr_of(QUAY_PKT_RTS);
    h.flags = WIRE_F_KEY | WIRE_F_SYNC;
    h.sreq = 7;
    h.key = 0x2423222120191817ull;
    is_size(wire_encode(&h, out), 40);
    ok(out[1] == 2 && out[2] == 5 && le64(out + 32) == 0x2423222120191817ull);
    h.flags = WIRE_F_PUT_OK;
    is_size(wire_encode(&h, out), 32);
    ok(out[2] == 8);

    /* CTS with the receiver's key. */
    h = hdr_of(QUAY_PKT_CTS);
    h.flags = WIRE_F_KEY;
    h.key = 0x2423222120191817ull;
    is_size(wire_encode(&h, out), 40);
    ok(out[1] == 3 && out[2] == 4 && le64(out + 32) == 0x2423222120191817ull);

    /* FIN: sreq 4, rreq 8, status 12; flag 0x1 = to the receiver. */
    h = hdr_of(QUAY_PKT_FIN);
    h.flags = WIRE_F_TO_RECV;
    h.sreq = 0x04030201u;
    h.rreq = 0x08070605u;
    h.status = QUAY_EPEER;
    is_size(wire_encode(&h, out), 16);
    ok(out[1] == 8 && out[2] == 1 && memcmp(out + 4, eager + 4, 8) == 0 &&
       (int32_t)le32(out + 12) == QUAY_EPEER);

    /* RTR: seq 4, ctx 8, src 12, tag 16, rreq 20, x 24, 0 at 28, cap 32, key 40. */
    h = hdr_of(QUAY_PKT_RTR);
    h.seq = 0x04030201u;
    h.ctx = 0x08070605u;
    h.src = 0x0c0b0a09;
    h.tag = QUAY_ANY_TAG;
    h.rreq = 0x14131211u;
    h.x = 0x18171615u;
    h.len = 0x2726252423222120ull;
    h.key = 0x2f2e2d2c2b2a2928ull;
    is_size(wire_encode(&h, out), 48);
    ok(out[1] == 9 && memcmp(out + 4, eager + 4, 12) == 0 &&
       (int32_t)le32(out + 16) == QUAY_ANY_TAG && le32(out + 20) == 0x14131211u &&
       le32(out + 24) == 0x18171615u && le32(out + 28) == 0 &&
       le64(out + 32) == 0x2726252423222120ull && le64(out + 40) == 0x2f2e2d2c2b2a2928ull);

    /* SC: seq 4, ctx 8, src 12, tag 16, sreq 20, rreq 24, status 28, len 32. */
    h = hdr_of(QUAY_PKT_SC);
    h.seq = 0x04030201u;
    h.ctx = 0x08070605u;
    h.src = 0x0c0b0a09;
    h.tag = 0x100f0e0d;
    h.sreq = 0x14131211u;
    h.rreq = 0x18171615u;
    h.status = QUAY_EPROTO;
    h.len = 0x2726252423222120ull;
    is_size(wire_encode(&h, out), 40);
    ok(out[1] == 10 && memcmp(out + 4, eager + 4, 24) == 0 &&
       (int32_t)le32(out + 28) == QUAY_EPROTO && le64(out + 32) == 0x2726252423222120ull);

    /* Arbitration, types 11..15, one 48-byte layout: seq 4, ctx 8, src 12,
     * tag 16, rreq 20, sreq 24, slot 28, len 32, key 40. Each type sets the
     * fields it uses; the expected bytes are written field by field. */
    static const struct {
        uint8_t type, num;
        uint16_t flags;
        int32_t tag;
        uint32_t rreq, sreq, slot;
        uint64_t len, key;
        const char *what;
    } arb[] = {
        {QUAY_PKT_ENA_ANY, 11, 0, QUAY_ANY_TAG, 0, 0, 0x00abcd01u, 0, 0, "ENA_ANY, ANY_TAG"},
        {QUAY_PKT_ENA_ANY, 11, 0, 0x100f0e0d, 0, 0, 0xffffffffu, 0, 0, "ENA_ANY, a tag"},
        {QUAY_PKT_ANY_FLAG, 12, 0, 0x100f0e0d, 0, 0x18171615u, 0x1c1b1a19u,
         0x2726252423222120ull, 0, "ANY_FLAG"},
        {QUAY_PKT_RTR_ANY, 13, 0, 0, 0x14131211u, 0x18171615u, 0, 0x2726252423222120ull,
         0x2f2e2d2c2b2a2928ull, "RTR_ANY"},
        {QUAY_PKT_DISABLE_ANY, 15, WIRE_F_DROP, 0, 0, 0x18171615u, 0x1c1b1a19u, 0, 0,
         "DISABLE_ANY declining a flag, DROP"},
        {QUAY_PKT_DISABLE_ANY, 15, 0, 0, 0, 0x18171615u, 0x1c1b1a19u, 0, 0,
         "DISABLE_ANY declining a flag"},
        {QUAY_PKT_DISABLE_ANY, 15, 0, 0, 0, 0, 0x1c1b1a19u, 0, 0, "DISABLE_ANY withdrawal"},
    };
    for (size_t i = 0; i < COUNT_OF(arb); i++) {
        h = hdr_of(arb[i].type);
        h.flags = arb[i].flags;
        h.seq = 0x04030201u;
        h.ctx = 0x08070605u;
        h.src = 0x0c0b0a09;
        h.tag = arb[i].tag;
        h.rreq = arb[i].rreq;
        h.sreq = arb[i].sreq;
        h.slot = arb[i].slot;
        h.len = arb[i].len;
        h.key = arb[i].key;
        memset(out, 0xee, sizeof out);
        size_t n = wire_encode(&h, out);
        uint8_t want[48];
        memset(want, 0, sizeof want);
        want[0] = 1;
        want[1] = arb[i].num;
        want[2] = (uint8_t)arb[i].flags;
        memcpy(want + 4, eager + 4, 12); /* seq, ctx, src as above */
        put32(want + 16, (uint32_t)arb[i].tag);
        put32(want + 20, arb[i].rreq);
        put32(want + 24, arb[i].sreq);
        put32(want + 28, arb[i].slot);
        put64(want + 32, arb[i].len);
        put64(want + 40, arb[i].key);
        ok_msg(n == 48 && memcmp(out, want, 48) == 0, "%s: 48 bytes at the documented offsets",
               arb[i].what);
        wire_hdr d;
        ok_msg(decode_exact(want, 48, &d) == 48 && same_fields(&h, &d) &&
                   d.seq == 0x04030201u && d.ctx == 0x08070605u && d.src == 0x0c0b0a09 &&
                   d.tag == arb[i].tag && d.rreq == arb[i].rreq && d.sreq == arb[i].sreq &&
                   d.slot == arb[i].slot && d.len == arb[i].len && d.key == arb[i].key,
               "%s: decoded from the documented bytes", arb[i].what);
    }
    /* The slot id: (index + 1) in the low byte, the generation above. */
    h = hdr_of(QUAY_PKT_ENA_ANY);
    h.slot = 7u << 8 | 3u; /* index 2, generation 7 */
    wire_encode(&h, out);
    ok(out[28] == 3 && out[29] == 7 && out[30] == 0 && out[31] == 0);
}

/* ---- round trips -------------------------------------------------------------- */

static void t_roundtrip(void)
{
    static uint8_t payload[300];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 13 + 5);
    static const uint32_t u32s[] = {0, 1, 0x7fffffffu, 0x80000000u, UINT32_MAX};
    static const int32_t i32s[] = {0, 1, 0x7ffffffe, INT32_MAX};
    static const uint16_t envflags[] = {0, WIRE_F_SYNC, WIRE_F_READY};
    static const size_t plens[] = {0, 1, 31, 32, 300};

    /* EAGER: every flag, boundary seq/ctx/src/tag/sreq, payload lengths. */
    int n = 0, pass = 0;
    for (size_t f = 0; f < COUNT_OF(envflags); f++)
        for (size_t a = 0; a < COUNT_OF(u32s); a++)
            for (size_t s = 0; s < COUNT_OF(i32s); s++)
                for (size_t p = 0; p < COUNT_OF(plens); p++) {
                    wire_hdr h = hdr_of(QUAY_PKT_EAGER);
                    h.flags = envflags[f];
                    h.seq = u32s[a];
                    h.ctx = u32s[COUNT_OF(u32s) - 1 - a];
                    h.src = i32s[s];
                    h.tag = i32s[COUNT_OF(i32s) - 1 - s];
                    h.sreq = envflags[f] ? (u32s[a] ? u32s[a] : 1) : u32s[a];
                    h.len = plens[p];
                    n++;
                    pass += roundtrip(&h, payload, plens[p], "EAGER");
                }
    ok_msg(pass == n, "%d/%d EAGER round trips", pass, n);

    /* RTS: len up to UINT64_MAX (no payload), sreq never 0. */
    static const uint64_t u64s[] = {0, 1, 8193, UINT32_MAX, (uint64_t)UINT32_MAX + 1,
                                    UINT64_MAX - 1, UINT64_MAX};
    for (size_t f = 0; f < COUNT_OF(envflags); f++)
        for (size_t l = 0; l < COUNT_OF(u64s); l++) {
            wire_hdr h = hdr_of(QUAY_PKT_RTS);
            h.flags = envflags[f];
            h.seq = u32s[l % COUNT_OF(u32s)];
            h.ctx = UINT32_MAX;
            h.src = INT32_MAX;
            h.tag = 0;
            h.sreq = l % 2 ? UINT32_MAX : 1;
            h.len = u64s[l];
            roundtrip(&h, NULL, 0, "RTS");
            /* the same offering a key, or to write into one */
            h.flags = (uint16_t)(envflags[f] | WIRE_F_KEY);
            h.key = u64s[(l + 3) % COUNT_OF(u64s)];
            roundtrip(&h, NULL, 0, "RTS with a key");
            h.flags = (uint16_t)(envflags[f] | WIRE_F_PUT_OK);
            roundtrip(&h, NULL, 0, "RTS offering to write");
        }

    /* CTS: grant may be 0; other ids non-zero; accepted up to UINT64_MAX. */
    for (size_t a = 1; a < COUNT_OF(u32s); a++)
        for (size_t l = 0; l < COUNT_OF(u64s); l++) {
            wire_hdr h = hdr_of(QUAY_PKT_CTS);
            h.sreq = u32s[a];
            h.rreq = u32s[COUNT_OF(u32s) - a];
            h.grant = u32s[(a + l) % COUNT_OF(u32s)];
            h.frag = u32s[a];
            h.index = u32s[COUNT_OF(u32s) - a];
            h.len = u64s[l];
            roundtrip(&h, NULL, 0, "CTS");
            h.flags = WIRE_F_KEY;
            h.key = u64s[(l + 2) % COUNT_OF(u64s)];
            roundtrip(&h, NULL, 0, "CTS with a key");
        }

    /* FIN: both directions, every status it may carry. */
    static const int32_t fin_st[] = {0, QUAY_EPEER, QUAY_EPROTO, QUAY_ESTATE};
    for (size_t a = 1; a < COUNT_OF(u32s); a++)
        for (size_t st = 0; st < COUNT_OF(fin_st); st++) {
            wire_hdr h = hdr_of(QUAY_PKT_FIN);
            h.flags = st % 2 ? WIRE_F_TO_RECV : 0;
            h.sreq = u32s[a];
            h.rreq = u32s[COUNT_OF(u32s) - a];
            h.status = fin_st[st];
            roundtrip(&h, NULL, 0, "FIN");
            /* SC carries the same statuses */
            wire_hdr c = hdr_of(QUAY_PKT_SC);
            c.seq = u32s[COUNT_OF(u32s) - a];
            c.ctx = u32s[a];
            c.src = i32s[st];
            c.tag = i32s[COUNT_OF(i32s) - 1 - st];
            c.sreq = u32s[a];
            c.rreq = u32s[COUNT_OF(u32s) - a];
            c.status = fin_st[st];
            c.len = u64s[(a + st) % COUNT_OF(u64s)];
            roundtrip(&c, NULL, 0, "SC");
        }

    /* RTR: a delegation with any tag pattern; revoke and cancel bare. */
    static const int32_t rtr_tags[] = {QUAY_ANY_TAG, 0, 7, INT32_MAX};
    for (size_t a = 1; a < COUNT_OF(u32s); a++)
        for (size_t t = 0; t < COUNT_OF(rtr_tags); t++) {
            wire_hdr h = hdr_of(QUAY_PKT_RTR);
            h.seq = u32s[a];
            h.ctx = u32s[COUNT_OF(u32s) - a];
            h.src = i32s[t];
            h.tag = rtr_tags[t];
            h.rreq = u32s[a];
            h.x = u32s[(a + t) % COUNT_OF(u32s)];
            h.len = u64s[(a + t) % COUNT_OF(u64s)];
            h.key = u64s[(a + 2 * t) % COUNT_OF(u64s)];
            roundtrip(&h, NULL, 0, "RTR");
            h.x = 0;
            h.len = 0;
            h.key = 0;
            h.flags = t % 2 ? WIRE_F_REVOKE : WIRE_F_CANCEL;
            roundtrip(&h, NULL, 0, "RTR revoke / cancel");
        }

    /* Arbitration: each type with boundary values in the fields it uses. */
    static const int32_t pat_tags[] = {QUAY_ANY_TAG, 0, 1, INT32_MAX};
    static const uint16_t dis_flags[] = {0, WIRE_F_DROP};
    n = pass = 0;
    for (size_t a = 0; a < COUNT_OF(u32s); a++)
        for (size_t t = 0; t < COUNT_OF(pat_tags); t++) {
            uint32_t nz = u32s[a] ? u32s[a] : 1; /* a field that must not be 0 */
            uint32_t nz2 = u32s[(a + t + 1) % COUNT_OF(u32s)] ? u32s[(a + t + 1) % COUNT_OF(u32s)]
                                                               : 2;
            wire_hdr h = hdr_of(QUAY_PKT_ENA_ANY);
            h.seq = u32s[a];
            h.ctx = u32s[COUNT_OF(u32s) - 1 - a];
            h.src = i32s[t];
            h.tag = pat_tags[t];
            h.slot = nz;
            n++;
            pass += roundtrip(&h, NULL, 0, "ENA_ANY");

            h = hdr_of(QUAY_PKT_ANY_FLAG);
            h.seq = u32s[COUNT_OF(u32s) - 1 - a];
            h.ctx = u32s[a];
            h.src = i32s[COUNT_OF(i32s) - 1 - t];
            h.tag = i32s[t];
            h.sreq = nz;
            h.slot = nz2;
            h.len = u64s[(a + t) % COUNT_OF(u64s)];
            n++;
            pass += roundtrip(&h, NULL, 0, "ANY_FLAG");

            h = hdr_of(QUAY_PKT_RTR_ANY);
            h.seq = u32s[a];
            h.ctx = u32s[(a + t) % COUNT_OF(u32s)];
            h.src = i32s[t];
            h.rreq = nz2;
            h.sreq = nz;
            h.len = u64s[(a + 2 * t) % COUNT_OF(u64s)];
            h.key = u64s[(a + t + 3) % COUNT_OF(u64s)];
            n++;
            pass += roundtrip(&h, NULL, 0, "RTR_ANY");

            for (size_t f = 0; f < COUNT_OF(dis_flags); f++) {
                h = hdr_of(QUAY_PKT_DISABLE_ANY);
                h.flags = dis_flags[f];
                h.seq = u32s[a];
                h.ctx = u32s[COUNT_OF(u32s) - 1 - a];
                h.src = i32s[t];
                h.sreq = nz2;
                h.slot = nz;
                n++;
                pass += roundtrip(&h, NULL, 0, "DISABLE_ANY declining a flag");
            }
            h.flags = 0;
            h.sreq = 0;
            n++;
            pass += roundtrip(&h, NULL, 0, "DISABLE_ANY withdrawing an announcement");
        }
    ok_msg(pass == n, "%d/%d arbitration round trips", pass, n);

    /* DATA: any offset, payload 1..300. */
    for (size_t l = 0; l < COUNT_OF(u64s); l++) {
        wire_hdr h = hdr_of(QUAY_PKT_DATA);
        h.rreq = l % 2 ? 1 : UINT32_MAX;
        h.offset = u64s[l];
        roundtrip(&h, payload, 1 + l * 40, "DATA");
    }

    /* ACK: status 0 / ENOTPOSTED; CANCEL_REP: 0 / 1; CANCEL_REQ: any target. */
    static const int32_t ack_st[] = {0, QUAY_ENOTPOSTED};
    static const int32_t rep_st[] = {0, 1};
    for (size_t a = 1; a < COUNT_OF(u32s); a++) {
        for (size_t s = 0; s < 2; s++) {
            wire_hdr h = hdr_of(QUAY_PKT_ACK);
            h.sreq = u32s[a];
            h.status = ack_st[s];
            roundtrip(&h, NULL, 0, "ACK");
            h.type = QUAY_PKT_CANCEL_REP;
            h.status = rep_st[s];
            roundtrip(&h, NULL, 0, "CANCEL_REP");
        }
        wire_hdr h = hdr_of(QUAY_PKT_CANCEL_REQ);
        h.seq = u32s[a];
        h.ctx = u32s[COUNT_OF(u32s) - a];
        h.sreq = u32s[a];
        h.target = u32s[(a + 2) % COUNT_OF(u32s)];
        roundtrip(&h, NULL, 0, "CANCEL_REQ");
    }
}

/* ---- rejections ------------------------------------------------------------------ */

/* One valid packet per type (EAGER with a 10-byte payload). */
static size_t valid_pkt(uint8_t type, uint8_t *out, size_t cap)
{
    static const uint8_t pl[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    wire_hdr h = hdr_of(type);
    switch (type) {
    case QUAY_PKT_EAGER:
    case QUAY_PKT_RTS:
        h.seq = 3;
        h.ctx = 4;
        h.src = 5;
        h.tag = 6;
        h.sreq = 7;
        h.len = type == QUAY_PKT_EAGER ? sizeof pl : 5000;
        return build(&h, pl, type == QUAY_PKT_EAGER ? sizeof pl : 0, out, cap);
    case QUAY_PKT_CTS:
        h.sreq = 1;
        h.rreq = 2;
        h.grant = 3;
        h.frag = 4;
        h.index = 5;
        h.len = 6;
        return build(&h, NULL, 0, out, cap);
    case QUAY_PKT_DATA:
        h.rreq = 1;
        h.offset = 128;
        return build(&h, pl, sizeof pl, out, cap);
    case QUAY_PKT_ACK:
    case QUAY_PKT_CANCEL_REP:
        h.sreq = 9;
        return build(&h, NULL, 0, out, cap);
    case QUAY_PKT_CANCEL_REQ:
        h.seq = 1;
        h.ctx = 2;
        h.sreq = 3;
        h.target = 0;
        return build(&h, NULL, 0, out, cap);
    case QUAY_PKT_FIN:
        h.sreq = 3;
        h.rreq = 4;
        return build(&h, NULL, 0, out, cap);
    case QUAY_PKT_RTR:
        h.seq = 1;
        h.ctx = 2;
        h.src = 3;
        h.tag = 4;
        h.rreq = 5;
        h.x = 6;
        h.len = 7;
        h.key = 8;
        return build(&h, NULL, 0, out, cap);
    case QUAY_PKT_SC:
        h.seq = 1;
        h.ctx = 2;
        h.src = 3;
        h.tag = 4;
        h.sreq = 5;
        h.rreq = 6;
        h.len = 7;
        return build(&h, NULL, 0, out, cap);
    /* Arbitration: every field docs/wire.md lets the type carry is set
     * (non-zero), the others are 0; DISABLE_ANY declines a flag. */
    case QUAY_PKT_ENA_ANY:
        h.seq = 1;
        h.ctx = 2;
        h.src = 3;
        h.tag = 4;
        h.slot = 0x101;
        return build(&h, NULL, 0, out, cap);
    case QUAY_PKT_ANY_FLAG:
        h.seq = 1;
        h.ctx = 2;
        h.src = 3;
        h.tag = 4;
        h.sreq = 5;
        h.slot = 0x101;
        h.len = 5000;
        return build(&h, NULL, 0, out, cap);
    case QUAY_PKT_RTR_ANY:
        h.seq = 1;
        h.ctx = 2;
        h.src = 3;
        h.rreq = 6;
        h.sreq = 5;
        h.len = 7;
        h.key = 8;
        return build(&h, NULL, 0, out, cap);
    case QUAY_PKT_DISABLE_ANY:
        h.seq = 1;
        h.ctx = 2;
        h.src = 3;
        h.sreq = 5;
        h.slot = 0x101;
        return build(&h, NULL, 0, out, cap);
    default: abort();
    }
}

static int rejects(const uint8_t *b, size_t len, const char *what)
{
    int rc = decode_exact(b, len, NULL);
    int spec = spec_check(b, len);
    return ok_msg(rc == QUAY_EPROTO && spec < 0, "reject %s (rc %d, spec %d)", what, rc,
                  spec);
}

static int accepts(const uint8_t *b, size_t len, const char *what)
{
    int rc = decode_exact(b, len, NULL);
    return ok_msg(rc > 0 && rc == spec_check(b, len), "accept %s (rc %d)", what, rc);
}

static void t_reject_short(void)
{
    uint8_t b[4] = {1, QUAY_PKT_ACK, 0, 0};
    wire_hdr h;
    is_int(wire_decode(NULL, 0, &h), QUAY_EPROTO);
    is_int(wire_decode(NULL, 12, &h), QUAY_EPROTO);
    rejects(b, 0, "empty");
    rejects(b, 1, "1 byte");
    rejects(b, 2, "2 bytes");
    rejects(b, 3, "3 bytes");
    rejects(b, 4, "4 bytes (ACK header only)");
}

static void t_reject_version_type(void)
{
    uint8_t b[64];
    for (uint8_t t = QUAY_PKT_EAGER; t <= QUAY_PKT_DISABLE_ANY; t++) {
        if (t == RETIRED_TYPE)
            continue;
        size_t n = valid_pkt(t, b, sizeof b);
        accepts(b, n, quay_pkt_name(t));
        static const uint8_t versions[] = {0, 2, 0x81, 255};
        for (size_t v = 0; v < COUNT_OF(versions); v++) {
            b[0] = versions[v];
            ok_msg(decode_exact(b, n, NULL) == QUAY_EPROTO, "%s with version %u",
                   quay_pkt_name(t), versions[v]);
        }
    }
    /* Unknown types, with enough bytes for any known header (14 is
     * retired: UNA_ANY, before a claim became the match). */
    static const uint8_t types[] = {0, RETIRED_TYPE, 16, 17, 0x7f, 0x80, 255};
    memset(b, 0, sizeof b);
    b[0] = 1;
    for (size_t i = 0; i < COUNT_OF(types); i++) {
        b[1] = types[i];
        for (size_t n = 4; n <= 64; n += 4) {
            if (decode_exact(b, n, NULL) != QUAY_EPROTO) {
                ok_msg(0, "type %u length %zu rejected", types[i], n);
                break;
            }
        }
        ok_msg(decode_exact(b, 32, NULL) == QUAY_EPROTO, "unknown type %u", types[i]);
    }
}

static void t_reject_length(void)
{
    uint8_t b[80];
    for (uint8_t t = QUAY_PKT_EAGER; t <= QUAY_PKT_DISABLE_ANY; t++) {
        if (t == RETIRED_TYPE)
            continue;
        size_t n = valid_pkt(t, b, sizeof b);
        size_t hl = spec_hl(t);
        /* Truncated by one byte (DATA: its header; a shorter DATA payload
         * is still well-formed), and every shorter header. */
        if (t == QUAY_PKT_DATA) {
            rejects(b, hl - 1, "DATA header truncated by one byte");
            accepts(b, n - 1, "DATA with one payload byte less");
        } else {
            rejects(b, n - 1, quay_pkt_name(t));
        }
        int all = 1;
        for (size_t k = 0; k < hl; k++)
            all &= decode_exact(b, k, NULL) == QUAY_EPROTO;
        ok_msg(all, "%s: every prefix shorter than its header rejected", quay_pkt_name(t));
        /* One byte more: fixed-size types (and EAGER, whose len then disagrees). */
        if (t != QUAY_PKT_DATA) {
            b[n] = 0;
            rejects(b, n + 1, quay_pkt_name(t));
        } else {
            accepts(b, n + 1, "DATA with one more payload byte");
        }
    }
}

static void t_reject_eager_len(void)
{
    uint8_t b[80];
    size_t n = valid_pkt(QUAY_PKT_EAGER, b, sizeof b); /* payload 10 */
    static const uint64_t lens[] = {0, 9, 11, 32 + 10, (uint64_t)1 << 32 | 10,
                                    UINT64_MAX - 21, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < COUNT_OF(lens); i++) {
        put64(b + 24, lens[i]);
        ok_msg(decode_exact(b, n, NULL) == QUAY_EPROTO, "EAGER len %llu with 10 payload bytes",
               (unsigned long long)lens[i]);
    }
    put64(b + 24, 10);
    accepts(b, n, "EAGER len 10");
    /* Payload longer / shorter than len. */
    b[n] = 0xaa;
    rejects(b, n + 1, "EAGER payload longer than len");
    rejects(b, n - 1, "EAGER payload shorter than len");
    /* RTS must have no payload whatever len says. */
    n = valid_pkt(QUAY_PKT_RTS, b, sizeof b);
    put64(b + 24, 1);
    memset(b + n, 0, 1);
    rejects(b, n + 1, "RTS len 1 with a 1-byte payload");
    put64(b + 24, UINT64_MAX);
    accepts(b, n, "RTS len UINT64_MAX");
}

static void t_reject_fields(void)
{
    uint8_t b[80];
    size_t n;

    /* Negative src / tag. */
    static const int32_t neg[] = {-1, -2, INT32_MIN};
    for (uint8_t t = QUAY_PKT_EAGER; t <= QUAY_PKT_RTS; t++) {
        for (size_t i = 0; i < COUNT_OF(neg); i++) {
            n = valid_pkt(t, b, sizeof b);
            put32(b + 12, (uint32_t)neg[i]);
            ok_msg(decode_exact(b, n, NULL) == QUAY_EPROTO, "%s src %d",
                   quay_pkt_name(t), neg[i]);
            n = valid_pkt(t, b, sizeof b);
            put32(b + 16, (uint32_t)neg[i]);
            ok_msg(decode_exact(b, n, NULL) == QUAY_EPROTO, "%s tag %d",
                   quay_pkt_name(t), neg[i]);
        }
    }

    /* Unknown flag bits: EAGER knows bits 0-1, RTS 0-3, CTS 2, FIN 0,
     * CANCEL_REP 0, RTR 0-1, DISABLE_ANY 0 (with a flag's sreq, which
     * valid_pkt sets); nothing else. A key bit on RTS / CTS comes with its
     * 8 bytes. */
    for (uint8_t t = QUAY_PKT_EAGER; t <= QUAY_PKT_DISABLE_ANY; t++) {
        if (t == RETIRED_TYPE)
            continue;
        int all = 1;
        for (int bit = 0; bit < 16; bit++) {
            int allowed = (t == QUAY_PKT_EAGER && bit < 2) || (t == QUAY_PKT_RTS && bit < 4) ||
                          (t == QUAY_PKT_CTS && bit == 2) || (t == QUAY_PKT_FIN && bit == 0) ||
                          (t == QUAY_PKT_CANCEL_REP && bit == 0) ||
                          (t == QUAY_PKT_DISABLE_ANY && bit == 0);
            if (t == QUAY_PKT_RTR && bit < 2) {
                /* revoke / cancel: valid only without x, cap and key */
                n = valid_pkt(t, b, sizeof b);
                b[2] = (uint8_t)(1u << bit);
                int bare = decode_exact(b, n, NULL) == QUAY_EPROTO;
                memset(b + 24, 0, 4);
                memset(b + 32, 0, 16);
                if (!bare || decode_exact(b, n, NULL) <= 0) {
                    all = 0;
                    note("RTR flag bit %d", bit);
                }
                continue;
            }
            n = valid_pkt(t, b, sizeof b);
            if ((t == QUAY_PKT_RTS || t == QUAY_PKT_CTS) && bit == 2) {
                put64(b + n, 0x1234);
                n += 8;
            }
            b[2] = (uint8_t)(bit < 8 ? 1u << bit : 0);
            b[3] = (uint8_t)(bit >= 8 ? 1u << (bit - 8) : 0);
            int rc = decode_exact(b, n, NULL);
            if (allowed ? rc <= 0 : rc != QUAY_EPROTO) {
                all = 0;
                note("%s flag bit %d: rc %d", quay_pkt_name(t), bit, rc);
            }
        }
        ok_msg(all, "%s: only the documented flag bits accepted", quay_pkt_name(t));
    }

    /* Zero request ids where the format requires one. */
    n = valid_pkt(QUAY_PKT_EAGER, b, sizeof b);
    put32(b + 20, 0);
    accepts(b, n, "standard EAGER with sreq 0");
    b[2] = WIRE_F_SYNC;
    rejects(b, n, "sync EAGER with sreq 0");
    b[2] = WIRE_F_READY;
    rejects(b, n, "ready EAGER with sreq 0");
    b[2] = WIRE_F_SYNC | WIRE_F_READY;
    rejects(b, n, "sync+ready EAGER with sreq 0");
    n = valid_pkt(QUAY_PKT_RTS, b, sizeof b);
    put32(b + 20, 0);
    rejects(b, n, "RTS with sreq 0");
    n = valid_pkt(QUAY_PKT_CTS, b, sizeof b);
    put32(b + 4, 0);
    rejects(b, n, "CTS with sreq 0");
    static const struct {
        size_t off;
        const char *name;
    } cts0[] = {{8, "CTS with rreq 0"}, {16, "CTS with frag 0"}, {20, "CTS with index 0"}};
    for (size_t i = 0; i < COUNT_OF(cts0); i++) {
        n = valid_pkt(QUAY_PKT_CTS, b, sizeof b);
        put32(b + cts0[i].off, 0);
        rejects(b, n, cts0[i].name);
    }
    n = valid_pkt(QUAY_PKT_CTS, b, sizeof b);
    put32(b + 12, 0);
    accepts(b, n, "CTS with grant 0");
    put64(b + 24, 0);
    accepts(b, n, "CTS with accepted 0");

    n = valid_pkt(QUAY_PKT_DATA, b, sizeof b);
    rejects(b, 16, "DATA with an empty payload");
    put32(b + 4, 0);
    rejects(b, n, "DATA with rreq 0");
    n = valid_pkt(QUAY_PKT_DATA, b, sizeof b);
    put64(b + 8, UINT64_MAX);
    accepts(b, n, "DATA at offset UINT64_MAX (range is the engine's job)");

    n = valid_pkt(QUAY_PKT_ACK, b, sizeof b);
    put32(b + 4, 0);
    rejects(b, n, "ACK with sreq 0");
    static const int32_t bad_ack[] = {1, -1, 2, QUAY_EPEER, QUAY_ETRUNCATE, QUAY_EPROTO,
                                      QUAY_ECANCELLED, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < COUNT_OF(bad_ack); i++) {
        n = valid_pkt(QUAY_PKT_ACK, b, sizeof b);
        put32(b + 8, (uint32_t)bad_ack[i]);
        ok_msg(decode_exact(b, n, NULL) == QUAY_EPROTO, "ACK status %d", bad_ack[i]);
    }
    put32(b + 8, (uint32_t)QUAY_ENOTPOSTED);
    accepts(b, n, "ACK ENOTPOSTED");

    n = valid_pkt(QUAY_PKT_CANCEL_REQ, b, sizeof b);
    put32(b + 12, 0);
    rejects(b, n, "CANCEL_REQ with sreq 0");
    n = valid_pkt(QUAY_PKT_CANCEL_REP, b, sizeof b);
    put32(b + 4, 0);
    rejects(b, n, "CANCEL_REP with sreq 0");
    static const int32_t bad_rep[] = {2, 3, -1, QUAY_ENOTPOSTED, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < COUNT_OF(bad_rep); i++) {
        n = valid_pkt(QUAY_PKT_CANCEL_REP, b, sizeof b);
        put32(b + 8, (uint32_t)bad_rep[i]);
        ok_msg(decode_exact(b, n, NULL) == QUAY_EPROTO, "CANCEL_REP status %d", bad_rep[i]);
    }

    n = valid_pkt(QUAY_PKT_FIN, b, sizeof b);
    put32(b + 4, 0);
    rejects(b, n, "FIN with sreq 0");
    n = valid_pkt(QUAY_PKT_FIN, b, sizeof b);
    put32(b + 8, 0);
    rejects(b, n, "FIN with rreq 0");
    static const int32_t bad_fin[] = {1, -1, QUAY_ETRUNCATE, QUAY_ENOTPOSTED, QUAY_ECANCELLED,
                                      INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < COUNT_OF(bad_fin); i++) {
        n = valid_pkt(QUAY_PKT_FIN, b, sizeof b);
        put32(b + 12, (uint32_t)bad_fin[i]);
        ok_msg(decode_exact(b, n, NULL) == QUAY_EPROTO, "FIN status %d", bad_fin[i]);
    }
    /* A key flag without its 8 bytes, or bytes without the flag. */
    n = valid_pkt(QUAY_PKT_RTS, b, sizeof b);
    b[2] = WIRE_F_KEY;
    rejects(b, n, "RTS with the key flag but no key");
    b[2] = 0;
    put64(b + n, 1);
    rejects(b, n + 8, "RTS with 8 bytes but no key flag");
    n = valid_pkt(QUAY_PKT_CTS, b, sizeof b);
    b[2] = WIRE_F_KEY;
    rejects(b, n, "CTS with the key flag but no key");
    put64(b + n, 1);
    accepts(b, n + 8, "CTS with its key");
    n = valid_pkt(QUAY_PKT_EAGER, b, sizeof b);
    b[2] = WIRE_F_KEY;
    rejects(b, n, "EAGER with the key flag");

    /* Arbitration packets, field by field (docs/wire.md's table): the
     * offsets are tag 16, rreq 20, sreq 24, slot 28, len 32, key 40. */
    static const struct {
        uint8_t type;
        size_t off, size;
        uint64_t v;
        int accept;
        const char *what;
    } arb[] = {
        {QUAY_PKT_ENA_ANY, 16, 4, (uint32_t)QUAY_ANY_TAG, 1, "ENA_ANY with ANY_TAG"},
        {QUAY_PKT_ENA_ANY, 16, 4, 0, 1, "ENA_ANY with tag 0"},
        {QUAY_PKT_ENA_ANY, 16, 4, (uint32_t)-2, 0, "ENA_ANY with tag -2"},
        {QUAY_PKT_ENA_ANY, 16, 4, 0x80000000u, 0, "ENA_ANY with tag INT32_MIN"},
        {QUAY_PKT_ENA_ANY, 20, 4, 1, 0, "ENA_ANY with an rreq"},
        {QUAY_PKT_ENA_ANY, 24, 4, 1, 0, "ENA_ANY with an sreq"},
        {QUAY_PKT_ENA_ANY, 28, 4, 0, 0, "ENA_ANY with slot 0"},
        {QUAY_PKT_ENA_ANY, 28, 4, 0x100, 1, "ENA_ANY with slot 0x100 (well formed)"},
        {QUAY_PKT_ENA_ANY, 32, 8, 1, 0, "ENA_ANY with a len"},
        {QUAY_PKT_ENA_ANY, 40, 8, 1ull << 63, 0, "ENA_ANY with a key"},
        {QUAY_PKT_ANY_FLAG, 16, 4, (uint32_t)QUAY_ANY_TAG, 0, "ANY_FLAG with ANY_TAG"},
        {QUAY_PKT_ANY_FLAG, 16, 4, 0, 1, "ANY_FLAG with tag 0"},
        {QUAY_PKT_ANY_FLAG, 20, 4, 1, 0, "ANY_FLAG with an rreq"},
        {QUAY_PKT_ANY_FLAG, 24, 4, 0, 0, "ANY_FLAG with sreq 0"},
        {QUAY_PKT_ANY_FLAG, 28, 4, 0, 0, "ANY_FLAG with slot 0"},
        {QUAY_PKT_ANY_FLAG, 32, 8, 0, 1, "ANY_FLAG with len 0"},
        {QUAY_PKT_ANY_FLAG, 32, 8, UINT64_MAX, 1, "ANY_FLAG with len UINT64_MAX"},
        {QUAY_PKT_ANY_FLAG, 40, 8, 1, 0, "ANY_FLAG with a key"},
        {QUAY_PKT_RTR_ANY, 16, 4, 1, 0, "RTR_ANY with a tag"},
        {QUAY_PKT_RTR_ANY, 16, 4, (uint32_t)QUAY_ANY_TAG, 0, "RTR_ANY with ANY_TAG"},
        {QUAY_PKT_RTR_ANY, 20, 4, 0, 0, "RTR_ANY with rreq 0"},
        {QUAY_PKT_RTR_ANY, 24, 4, 0, 0, "RTR_ANY with sreq 0"},
        {QUAY_PKT_RTR_ANY, 28, 4, 1, 0, "RTR_ANY with a slot"},
        {QUAY_PKT_RTR_ANY, 32, 8, 0, 1, "RTR_ANY with capacity 0"},
        {QUAY_PKT_RTR_ANY, 40, 8, 0, 1, "RTR_ANY with key 0 (checked when used)"},
        {QUAY_PKT_RTR_ANY, 40, 8, UINT64_MAX, 1, "RTR_ANY with key UINT64_MAX"},
        {QUAY_PKT_DISABLE_ANY, 16, 4, 1, 0, "DISABLE_ANY with a tag"},
        {QUAY_PKT_DISABLE_ANY, 20, 4, 1, 0, "DISABLE_ANY with an rreq"},
        {QUAY_PKT_DISABLE_ANY, 24, 4, 0, 1, "DISABLE_ANY with sreq 0 (a withdrawal)"},
        {QUAY_PKT_DISABLE_ANY, 28, 4, 0, 0, "DISABLE_ANY with slot 0"},
        {QUAY_PKT_DISABLE_ANY, 32, 8, 1, 0, "DISABLE_ANY with a len"},
        {QUAY_PKT_DISABLE_ANY, 40, 8, 1, 0, "DISABLE_ANY with a key"},
    };
    for (size_t i = 0; i < COUNT_OF(arb); i++) {
        n = valid_pkt(arb[i].type, b, sizeof b);
        if (arb[i].size == 4)
            put32(b + arb[i].off, (uint32_t)arb[i].v);
        else
            put64(b + arb[i].off, arb[i].v);
        if (arb[i].accept)
            accepts(b, n, arb[i].what);
        else
            rejects(b, n, arb[i].what);
    }
    for (uint8_t t = QUAY_PKT_ENA_ANY; t <= QUAY_PKT_DISABLE_ANY; t++) {
        if (t == RETIRED_TYPE)
            continue;
        for (size_t i = 0; i < COUNT_OF(neg); i++) {
            n = valid_pkt(t, b, sizeof b);
            put32(b + 12, (uint32_t)neg[i]);
            ok_msg(decode_exact(b, n, NULL) == QUAY_EPROTO, "%s src %d", quay_pkt_name(t),
                   neg[i]);
        }
        n = valid_pkt(t, b, sizeof b);
        b[n] = 0;
        rejects(b, n + 1, "arbitration packet with a payload byte");
    }
    /* DROP needs the flag's send; without DROP a withdrawal has none. */
    n = valid_pkt(QUAY_PKT_DISABLE_ANY, b, sizeof b);
    b[2] = WIRE_F_DROP;
    accepts(b, n, "DISABLE_ANY with DROP and an sreq");
    put32(b + 24, 0);
    rejects(b, n, "DISABLE_ANY with DROP and sreq 0");
    b[2] = WIRE_F_DROP | 2;
    put32(b + 24, 5);
    rejects(b, n, "DISABLE_ANY with flag 0x2");
}

/* ---- seeded random ----------------------------------------------------------------- */

typedef struct fuzz_stats {
    long runs, accepted, verdict_mismatch, reencode_mismatch;
    long accepted_any; /* of them arbitration packets (types 11..15) */
} fuzz_stats;

static void fuzz_one(const uint8_t *b, size_t len, fuzz_stats *fs)
{
    wire_hdr h;
    int rc = decode_exact(b, len, &h);
    int want = spec_check(b, len);
    fs->runs++;
    if (!(rc == want || (want < 0 && rc == QUAY_EPROTO))) {
        if (fs->verdict_mismatch++ < 5)
            note("verdict: len %zu type %u: decoder %d, spec %d", len,
                 len > 1 ? b[1] : 0, rc, want);
        return;
    }
    if (rc > 0) {
        fs->accepted++;
        fs->accepted_any += b[1] >= QUAY_PKT_ENA_ANY && b[1] <= QUAY_PKT_DISABLE_ANY;
        uint8_t again[QUAY_MAX_HEADER];
        size_t hl = wire_encode(&h, again);
        if (hl != (size_t)rc || memcmp(again, b, hl) != 0) {
            if (fs->reencode_mismatch++ < 5)
                note("re-encode differs: type %u, header %d", b[1], rc);
        }
    }
}

static void t_random_strings(void)
{
    rng r = {0x9e3779b97f4a7c15ull};
    fuzz_stats fs = {0, 0, 0, 0, 0};
    uint8_t b[80];
    for (int i = 0; i < 100000; i++) {
        size_t len = rng_below(&r, 81);
        for (size_t k = 0; k < len; k++)
            b[k] = (uint8_t)rng_next(&r);
        /* Bias towards the interesting part of the input space: a valid
         * version, a near-valid type, clean flags, plausible fields. */
        uint32_t coin = (uint32_t)rng_next(&r);
        if (len >= 1 && (coin & 3) != 0)
            b[0] = WIRE_VERSION;
        if (len >= 2 && (coin & 12) != 0)
            b[1] = (uint8_t)(1 + rng_below(&r, 16)); /* 1..15 and 16 (unknown) */
        if (len >= 4 && (coin & 0x30) != 0) {
            b[2] = (uint8_t)((coin & 0x40) ? rng_below(&r, 4) : 0);
            b[3] = 0;
        }
        if (len >= 32 && (coin & 0x180) != 0) {
            b[15] &= 0x7f; /* src >= 0 */
            b[19] &= 0x7f; /* tag >= 0 */
            if (b[1] == QUAY_PKT_EAGER)
                put64(b + 24, len - 32);
            if (b[1] == QUAY_PKT_ACK || b[1] == QUAY_PKT_CANCEL_REP)
                put32(b + 8, coin & 0x200 ? 0 : 1);
        }
        if (len >= 12 && (coin & 0xc00) == 0x400 &&
            (b[1] == QUAY_PKT_ACK || b[1] == QUAY_PKT_CANCEL_REP)) {
            len = 12;
            put32(b + 8, b[1] == QUAY_PKT_ACK ? (uint32_t)QUAY_ENOTPOSTED : 1);
        }
        /* Arbitration packets: exactly 48 bytes, src >= 0, flags 0 or
         * 0x1, each later field zeroed with probability 1/2 (most of them
         * must be 0 for some type). */
        if (len >= 4 && b[1] >= QUAY_PKT_ENA_ANY && b[1] <= QUAY_PKT_DISABLE_ANY &&
            (coin & 0x3000) != 0) {
            static const size_t offs[] = {16, 20, 24, 28, 32, 40};
            static const size_t sizes[] = {4, 4, 4, 4, 8, 8};
            uint32_t z = (uint32_t)rng_next(&r);
            for (size_t k = len; k < 48; k++)
                b[k] = (uint8_t)rng_next(&r);
            len = 48;
            b[2] &= 1;
            b[3] = 0;
            b[15] &= 0x7f;
            for (size_t k = 0; k < COUNT_OF(offs); k++)
                if (z >> k & 1u)
                    memset(b + offs[k], 0, sizes[k]);
        }
        fuzz_one(b, len, &fs);
    }
    note("%ld random strings, %ld accepted (%ld arbitration)", fs.runs, fs.accepted,
         fs.accepted_any);
    is_int(fs.runs, 100000);
    is_int(fs.verdict_mismatch, 0);
    is_int(fs.reencode_mismatch, 0);
    ok_msg(fs.accepted >= 1000, "random strings reached acceptance (%ld)", fs.accepted);
    ok_msg(fs.accepted_any >= 100, "random arbitration packets reached acceptance (%ld)",
           fs.accepted_any);
}

static void t_random_mutations(void)
{
    rng r = {0x243f6a8885a308d3ull};
    fuzz_stats fs = {0, 0, 0, 0, 0};
    enum { NTYPES = QUAY_PKT_DISABLE_ANY };
    uint8_t base[NTYPES][80];
    size_t blen[NTYPES];
    for (uint8_t t = QUAY_PKT_EAGER; t <= QUAY_PKT_DISABLE_ANY; t++)
        blen[t - 1] = t == RETIRED_TYPE ? 0 : valid_pkt(t, base[t - 1], sizeof base[0]);
    uint8_t b[96];
    long rejected = 0;
    for (int i = 0; i < 100000; i++) {
        int t = (int)rng_below(&r, NTYPES);
        if (t + 1 == RETIRED_TYPE)
            t++;
        size_t len = blen[t];
        memcpy(b, base[t], len);
        uint32_t how = rng_below(&r, 10);
        if (how < 7) { /* one byte replaced by a random value */
            size_t pos = rng_below(&r, (uint32_t)len);
            b[pos] = (uint8_t)rng_next(&r);
        } else if (how < 8) { /* one bit flipped */
            size_t pos = rng_below(&r, (uint32_t)len);
            b[pos] ^= (uint8_t)(1u << rng_below(&r, 8));
        } else if (how < 9) { /* truncated */
            len -= 1 + rng_below(&r, (uint32_t)len);
        } else { /* extended */
            size_t more = 1 + rng_below(&r, 16);
            for (size_t k = 0; k < more; k++)
                b[len + k] = (uint8_t)rng_next(&r);
            len += more;
        }
        long before = fs.accepted;
        fuzz_one(b, len, &fs);
        rejected += fs.accepted == before;
    }
    note("%ld mutations: %ld accepted (%ld arbitration), %ld rejected", fs.runs, fs.accepted,
         fs.accepted_any, rejected);
    is_int(fs.verdict_mismatch, 0);
    is_int(fs.reencode_mismatch, 0);
    ok(fs.accepted > 10000 && rejected > 10000);
    ok_msg(fs.accepted_any > 2000, "mutated arbitration packets accepted (%ld)", fs.accepted_any);
}

int main(void)
{
    subtest("header lengths", t_lengths);
    subtest("byte layout at documented offsets", t_layout);
    subtest("round trip with boundary values", t_roundtrip);
    subtest("reject short input", t_reject_short);
    subtest("reject version and type", t_reject_version_type);
    subtest("reject truncated and extended", t_reject_length);
    subtest("reject EAGER length disagreement", t_reject_eager_len);
    subtest("reject field ranges", t_reject_fields);
    subtest("random strings", t_random_strings);
    subtest("random mutations of valid packets", t_random_mutations);
    return done_testing();
}
