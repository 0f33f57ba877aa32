/*
 * test_badframe.c — untrusted channel frames (QUAY_FLOW_ACKNACK and
 * QUAY_FLOW_CREDIT): every malformed field, every ACK/NACK/grant that
 * cannot be valid now, frames from a failed peer, and a random-mutation
 * run. Frames are forged with a correct CRC32C, so the checks behind the
 * checksum are the ones exercised. Nothing may crash, every call returns a
 * defined code, and the engine must still work afterwards.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/wire.h"
#include "flowctl/chan.h"
#include "flowctl/crc32c.h"
#include "harness.h"
#include "testnet.h"

static testnet T;
static uint32_t crc_table[256];

static void setup(uint32_t flow)
{
    quay_config c;
    tn_config(&c, 0, 2);
    c.malformed_limit = 0; /* (refusals are this test's subject) */
    c.flow = flow;
    c.flow_credits = flow == QUAY_FLOW_CREDIT ? 8 : 0;
    c.rto_init_ns = 1000;
    c.rto_max_ns = 8000;
    c.retry_limit = 4;
    is_int(tn_init(&T, 2, &c), 0);
}

/* Build a frame into b: header fields, then `body` (an engine packet),
 * with a correct CRC (computed with the CRC field zero). Returns length. */
static size_t frame(uint8_t *b, uint8_t kind, uint16_t flags, uint32_t seq, uint32_t ack,
                    uint32_t aux, const void *body, size_t blen)
{
    b[0] = CHAN_VERSION;
    b[1] = kind;
    wire_put16(b + 2, flags);
    wire_put32(b + 4, seq);
    wire_put32(b + 8, ack);
    wire_put32(b + 12, aux);
    wire_put32(b + 16, 0);
    if (blen)
        memcpy(b + CHAN_FRAME_LEN, body, blen);
    wire_put32(b + 16, crc32c_update(crc_table, 0, b, CHAN_FRAME_LEN + blen));
    return CHAN_FRAME_LEN + blen;
}

/* Stamp b's CRC again after a field changed (as frame() does). */
static void restamp(uint8_t *b, size_t n)
{
    wire_put32(b + 16, 0);
    wire_put32(b + 16, crc32c_update(crc_table, 0, b, n));
}

/* The CRC of a frame from `from` to `to` (docs/flowctl.md: seeded with
 * the context key, then the two ends, then the frame with its CRC field
 * zero). frame() stamps a CRC of the bytes alone; deliver() turns one
 * that is right for the bytes into the one for the frame's two ends, and
 * leaves one a test broke on purpose broken. */
static uint32_t ends_crc(const uint8_t *b, size_t n, int32_t from, int32_t to)
{
    uint8_t ends[4], zero[4] = {0, 0, 0, 0};
    wire_put32(ends, (uint32_t)from | (uint32_t)to << 16);
    uint32_t c = crc32c_update(crc_table, 0, ends, 4);
    c = crc32c_update(crc_table, c, b, 16);
    c = crc32c_update(crc_table, c, zero, 4);
    return crc32c_update(crc_table, c, b + CHAN_FRAME_LEN, n - CHAN_FRAME_LEN);
}

static int deliver(int to, const uint8_t *b, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (c == NULL)
        abort();
    memcpy(c, b, n);
    if (n >= CHAN_FRAME_LEN) {
        uint32_t stamped = wire_get32(c + 16);
        wire_put32(c + 16, 0);
        if (crc32c_update(crc_table, 0, c, n) == stamped)
            stamped = ends_crc(c, n, 1 - to, to);
        wire_put32(c + 16, stamped);
    }
    int rc = quay_on_packet(T.e[to], 1 - to, c, n);
    free(c);
    return rc;
}

/* A real engine packet (an EAGER of 4 bytes from rank 0 to rank 1),
 * taken from rank 0's first SEND, without its frame. */
static size_t real_body(uint8_t *out)
{
    uint8_t buf[4] = {1, 2, 3, 4};
    quay_req *s;
    quay_action a;
    size_t n = 0;
    is_int(quay_isend(T.e[0], T.world[0], buf, 4, 1, 9, QUAY_SEND_STANDARD, &s), 0);
    is_int(quay_next_action(T.e[0], &a), 1);
    for (uint32_t i = 0; i < a.iovcnt; i++) {
        memcpy(out + n, a.iov[i].base, a.iov[i].len);
        n += a.iov[i].len;
    }
    quay_on_op_done(T.e[0], a.token, 0);
    /* The send stays unacknowledged at rank 0; rank 1 never sees it. */
    quay_req_free(T.e[0], s);
    memmove(out, out + CHAN_FRAME_LEN, n - CHAN_FRAME_LEN);
    return n - CHAN_FRAME_LEN;
}

static void t_malformed(void)
{
    uint8_t b[256];
    size_t n;
    quay_stats st;
    setup(QUAY_FLOW_ACKNACK);
    n = frame(b, CHAN_ACK, 0, 0, 0, 0, NULL, 0);
    is_int(deliver(1, b, n), 0); /* the well-formed baseline */
    is_int(deliver(1, b, CHAN_FRAME_LEN - 1), QUAY_EPROTO);
    is_int(deliver(1, b, 0), QUAY_EPROTO);
    n = frame(b, CHAN_ACK, 0, 0, 0, 0, NULL, 0);
    b[0] = 0xC2;
    restamp(b, n); /* an intact frame of another version */
    is_int(deliver(1, b, n), QUAY_EPROTO); /* version */
    for (int kind = 0; kind < 256; kind++) {
        if (kind == CHAN_DATA || kind == CHAN_ACK)
            continue;
        n = frame(b, (uint8_t)kind, 0, 0, 0, 0, NULL, 0);
        if (deliver(1, b, n) != QUAY_EPROTO) {
            ok_msg(0, "kind %d accepted", kind);
            break;
        }
    }
    for (unsigned bit = 4; bit < 16; bit++) {
        n = frame(b, CHAN_ACK, (uint16_t)(1u << bit), 0, 0, 0, NULL, 0);
        if (deliver(1, b, n) != QUAY_EPROTO) {
            ok_msg(0, "flag bit %u accepted", bit);
            break;
        }
    }
    /* Checksum. */
    n = frame(b, CHAN_ACK, 0, 0, 0, 0, NULL, 0);
    b[16] ^= 1;
    is_int(deliver(1, b, n), QUAY_EPROTO);
    quay_engine_stats(T.e[1], &st);
    is_int((int)st.bad_checksum, 1);
    /* ACK-only frames: exactly 20 bytes, seq 0. */
    n = frame(b, CHAN_ACK, 0, 0, 0, 0, "x", 1);
    is_int(deliver(1, b, n), QUAY_EPROTO);
    n = frame(b, CHAN_ACK, 0, 7, 0, 0, NULL, 0);
    is_int(deliver(1, b, n), QUAY_EPROTO);
    /* The NACK field: equal to ack under NACK, else 0. */
    n = frame(b, CHAN_ACK, CHAN_F_NACK, 0, 0, 1, NULL, 0);
    is_int(deliver(1, b, n), QUAY_EPROTO);
    n = frame(b, CHAN_ACK, 0, 0, 0, 5, NULL, 0);
    is_int(deliver(1, b, n), QUAY_EPROTO);
    /* Credit flags belong to the other policy. */
    n = frame(b, CHAN_ACK, CHAN_F_CREDIT, 0, 0, 5, NULL, 0);
    is_int(deliver(1, b, n), QUAY_EPROTO);
    n = frame(b, CHAN_ACK, CHAN_F_BLOCKED, 0, 0, 0, NULL, 0);
    is_int(deliver(1, b, n), QUAY_EPROTO);
    /* From ourselves: never on the wire. */
    n = frame(b, CHAN_ACK, 0, 0, 0, 0, NULL, 0);
    is_int(quay_on_packet(T.e[1], 1, b, n), QUAY_EPROTO);
    quay_engine_stats(T.e[1], &st);
    is_int((int)st.peers_failed, 0);
    tn_fini(&T);
}

/* Acknowledgements and refusals of what was never sent. */
static void t_impossible_acks(void)
{
    uint8_t b[256];
    size_t n;
    setup(QUAY_FLOW_ACKNACK);
    /* Rank 1 never sent anything to rank 0: any ack > 0 is impossible. */
    n = frame(b, CHAN_ACK, 0, 0, 1, 0, NULL, 0);
    is_int(deliver(0, b, n), QUAY_ESTATE);
    n = frame(b, CHAN_ACK, 0, 0, 0x80000000u, 0, NULL, 0);
    is_int(deliver(0, b, n), QUAY_ESTATE);
    n = frame(b, CHAN_ACK, CHAN_F_NACK, 0, 0, 0, NULL, 0);
    is_int(deliver(0, b, n), QUAY_ESTATE); /* NACK 0: never sent */
    /* A stale ack (behind una, serially) changes nothing. */
    n = frame(b, CHAN_ACK, 0, 0, 0xFFFFFFF0u, 0, NULL, 0);
    is_int(deliver(0, b, n), 0);
    /* Rank 0 sends one message; ack 1 is now right, ack 2 still not. */
    uint8_t body[128];
    size_t bl = real_body(body);
    ok(bl > 0);
    n = frame(b, CHAN_ACK, 0, 0, 2, 0, NULL, 0);
    is_int(deliver(0, b, n), QUAY_ESTATE);
    n = frame(b, CHAN_ACK, CHAN_F_NACK, 0, 1, 1, NULL, 0);
    is_int(deliver(0, b, n), QUAY_ESTATE); /* NACK 1 = next: never sent */
    n = frame(b, CHAN_ACK, 0, 0, 1, 0, NULL, 0);
    is_int(deliver(0, b, n), 0);
    quay_stats st;
    quay_engine_stats(T.e[0], &st);
    is_int(st.outs_in_use, 0); /* acknowledged and op_done'd: released */
    tn_fini(&T);
}

/* Data frames out of turn, duplicated, and carrying garbage. */
static void t_data_frames(void)
{
    uint8_t b[256], body[128], rb[8];
    size_t n, bl;
    quay_req *r;
    quay_status sts;
    quay_stats st;
    setup(QUAY_FLOW_ACKNACK);
    bl = real_body(body);
    /* Far ahead: discarded (one gap NACK owed), nothing delivered. */
    n = frame(b, CHAN_DATA, 0, 0x40000000u, 0, 0, body, bl);
    is_int(deliver(1, b, n), 0);
    quay_engine_stats(T.e[1], &st);
    is_int((int)st.umsgs_in_use, 0);
    is_int((int)st.out_of_order_dropped, 1);
    /* Garbage inside a well-framed packet: the channel takes the frame
     * (re-sending those bytes cannot help: only the sender's own stream
     * is spent), so the answer is 0; the engine's refusal of its content
     * is counted against the peer. */
    uint8_t junk[12] = {0xEE, 0xEE};
    n = frame(b, CHAN_DATA, 0, 0, 0, 0, junk, sizeof junk);
    is_int(deliver(1, b, n), 0);
    quay_engine_stats(T.e[1], &st);
    is_int((int)st.pkts_rejected, 1);
    /* The real message as seq 1 then arrives and matches. */
    n = frame(b, CHAN_DATA, 0, 1, 0, 0, body, bl);
    is_int(deliver(1, b, n), 0);
    is_int(deliver(1, b, n), 0); /* duplicate: dropped */
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 9, &r), 0);
    ok(tn_done(r, &sts) && sts.count == 4 && rb[3] == 4);
    quay_req_free(T.e[1], r);
    quay_engine_stats(T.e[1], &st);
    is_int((int)st.dups_dropped, 1);
    is_int((int)st.gap_nacks, 0); /* owed, not yet sent */
    tn_fini(&T);
}

/* Credit mode: grants are validated. */
static void t_credit_frames(void)
{
    uint8_t b[256];
    size_t n;
    setup(QUAY_FLOW_CREDIT);
    n = frame(b, CHAN_ACK, 0, 0, 0, 0, NULL, 0);
    is_int(deliver(1, b, n), QUAY_EPROTO); /* no CREDIT flag */
    n = frame(b, CHAN_ACK, CHAN_F_CREDIT, 0, 0, 5, NULL, 0);
    is_int(deliver(1, b, n), 0);
    n = frame(b, CHAN_ACK, CHAN_F_CREDIT | CHAN_F_BLOCKED, 0, 0, 5, NULL, 0);
    is_int(deliver(1, b, n), 0);
    ok(quay_has_actions(T.e[1])); /* a probe is answered */
    /* An absurd grant (2^31 ahead) is ignored: sends stay within the
     * configured 8 credits. */
    n = frame(b, CHAN_ACK, CHAN_F_CREDIT, 0, 0, 0x80000000u, NULL, 0);
    is_int(deliver(0, b, n), 0);
    uint8_t m[8] = {0};
    quay_req *s[50];
    for (int i = 0; i < 50; i++)
        is_int(quay_isend(T.e[0], T.world[0], m, 8, 1, 1, QUAY_SEND_STANDARD, &s[i]), 0);
    tn_pull(&T, 0);
    ok_msg(T.nq == 8, "%d packets sent, the configured credits", T.nq);
    /* A grant far ahead but within 2^30 of una is believed. */
    n = frame(b, CHAN_ACK, CHAN_F_CREDIT, 0, 0, 20, NULL, 0);
    is_int(deliver(0, b, n), 0);
    tn_pull(&T, 0);
    ok_msg(T.nq == 20, "%d packets sent after a grant of 20", T.nq);
    for (int i = 0; i < 50; i++)
        quay_req_free(T.e[0], s[i]);
    tn_fini(&T);
}

/* A failed peer's frames are refused. */
static void t_failed_peer(void)
{
    uint8_t b[256], m[4] = {0};
    size_t n;
    quay_req *s;
    uint64_t now = 0;
    setup(QUAY_FLOW_ACKNACK);
    is_int(quay_isend(T.e[0], T.world[0], m, 4, 1, 1, QUAY_SEND_STANDARD, &s), 0);
    tn_pull(&T, 0);
    while (T.nq > 0)
        tn_drop(&T, 0);
    for (int i = 0; i < 20 && quay_next_deadline(T.e[0]) != QUAY_TIME_NONE; i++) {
        now = quay_next_deadline(T.e[0]);
        quay_on_time(T.e[0], now);
        tn_pull(&T, 0);
        while (T.nq > 0)
            tn_drop(&T, 0);
    }
    quay_status sts;
    ok(tn_done(s, &sts) && sts.error == QUAY_EPEER);
    n = frame(b, CHAN_ACK, 0, 0, 0, 0, NULL, 0);
    is_int(deliver(0, b, n), QUAY_ESTATE);
    quay_req_free(T.e[0], s);
    tn_fini(&T);
}

/* Random mutations of valid frames (CRC fixed up so the parser behind it
 * runs): only defined codes, no crash (ASan), engine usable after. */
static void t_mutations(void)
{
    uint8_t base[256], b[256], body[128];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int odd = 0;
    for (int policy = QUAY_FLOW_ACKNACK; policy <= QUAY_FLOW_CREDIT; policy++) {
        setup((uint32_t)policy);
        size_t bl = real_body(body);
        uint16_t cf = policy == QUAY_FLOW_CREDIT ? CHAN_F_CREDIT : 0;
        uint32_t aux = policy == QUAY_FLOW_CREDIT ? 64 : 0;
        size_t bn = frame(base, CHAN_DATA, cf, 0, 0, aux, body, bl);
        for (int i = 0; i < 20000; i++) {
            memcpy(b, base, bn);
            size_t n = bn;
            int flips = 1 + (int)(x % 4);
            for (int k = 0; k < flips; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                b[x % n] ^= (uint8_t)(1u << ((x >> 8) % 8));
            }
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            if (x % 5 == 0)
                n = (size_t)(x >> 8) % (bn + 1);
            if (n >= CHAN_FRAME_LEN)
                wire_put32(b + 16, ends_crc(b, n, 0, 1)); /* (rank 0 to 1) */
            int rc = quay_on_packet(T.e[1], 0, b, n);
            if (rc != 0 && rc != QUAY_EPROTO && rc != QUAY_ESTATE && rc != QUAY_ETRUNCATE)
                odd++;
            quay_action a;
            while (quay_next_action(T.e[1], &a) == 1)
                if (a.kind == QUAY_ACT_SEND)
                    quay_on_op_done(T.e[1], a.token, 0);
        }
        is_int(odd, 0);
        quay_stats st;
        quay_engine_stats(T.e[1], &st);
        note("policy %d: %llu accepted, %llu rejected", policy,
             (unsigned long long)st.pkts_in, (unsigned long long)st.pkts_rejected);
        tn_fini(&T);
    }
}

int main(void)
{
    crc32c_table_init(crc_table);
    subtest("malformed frames", t_malformed);
    subtest("impossible ACKs and NACKs", t_impossible_acks);
    subtest("data frames out of turn, duplicated, garbage inside", t_data_frames);
    subtest("credit frames", t_credit_frames);
    subtest("frames from a failed peer", t_failed_peer);
    subtest("random mutations behind a valid CRC", t_mutations);
    return done_testing();
}
