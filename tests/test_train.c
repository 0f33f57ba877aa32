/*
 * test_train.c — coalesced inline sends ("trains", inline.c / engine.c).
 *
 * quay_send_inline appends a message to the inline queue's last packet
 * when it goes to the same peer on the same communicator and has not been
 * pulled: one SEND whose iov[0] is the first message (an EAGER flagged
 * WIRE_F_MORE) and iov[1] the pieces behind it (tag, length, payload;
 * numbers and envelope implied). Checked here: the packet's shape and
 * bounds (QUAY_TRAIN_MAX, max_packet, peer and communicator changes,
 * QUAY_CFG_NO_COALESCE),
 * delivery to posted, late, wildcard and truncating receives, trains
 * reordered on the wire, a train answered QUAY_EAGAIN and offered again
 * (no message taken twice, none lost), malformed trains (rejected whole,
 * nothing taken), a train inside a flow-control frame, the pool of train
 * buffers running out and coming back, a failed peer, and the trace.
 */
#include <string.h>

#include "engine/internal.h"
#include "engine/wire.h"
#include "flowctl/chan.h"
#include "flowctl/crc32c.h"
#include "harness.h"
#include "testnet.h"

static testnet T;
static int with_oracle; /* else the fast matcher alone: the lean trains */

/* tn_init / tn_init_each with the oracle alongside or not. */
static void net_init_each(int n, quay_config *cfg, int each)
{
    quay_config c[4];
    for (int r = 0; r < n; r++) {
        if (cfg == NULL)
            tn_config(&c[r], r, n);
        else
            c[r] = cfg[each ? r : 0];
        if (!with_oracle)
            c[r].flags &= ~(uint32_t)QUAY_CFG_CHECK_ORACLE;
    }
    is_int(tn_init_each(&T, n, c, 1), 0);
}

static void net_init(int n, quay_config *cfg)
{
    net_init_each(n, cfg, 0);
}

/* In-flight packets from rank `from` to rank `to`. */
static int npkts(int from, int to)
{
    int n = 0;
    for (int i = 0; i < T.nq; i++)
        n += T.q[i].from == from && T.q[i].to == to;
    return n;
}

/* The messages of train bytes[0..len), read here independently of
 * train_shape: their count (-1 if the pieces do not end the packet);
 * the number and tag of each in seq[] / tag[] (up to 64). */
static int train_walk(const uint8_t *b, size_t len, uint32_t *seq, int32_t *tag)
{
    if (len < WIRE_ENV_LEN)
        return -1;
    seq[0] = wire_get32(b + 4);
    tag[0] = (int32_t)wire_get32(b + 16);
    size_t off = WIRE_ENV_LEN + (size_t)wire_get64(b + 24);
    int n = 1;
    while (off + WIRE_PIECE_LEN <= len && n < 64) {
        seq[n] = seq[0] + (uint32_t)n;
        tag[n] = (int32_t)wire_get32(b + off);
        off += WIRE_PIECE_LEN + wire_get32(b + off + 4);
        n++;
    }
    return off == len ? n : -1;
}

/* The SEND of four messages: one action, iov[0] the first message
 * (flagged MORE), iov[1] the other three as pieces; consecutive numbers;
 * one op_done returns everything. */
static void t_shape(void)
{
    net_init(2, NULL);
    uint8_t a[8], b[64], c[3];
    tn_fill(a, sizeof a, 1);
    tn_fill(b, sizeof b, 2);
    tn_fill(c, sizeof c, 3);
    is_int(quay_send_inline(T.e[0], T.world[0], a, sizeof a, 1, 1), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], b, sizeof b, 1, 2), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], NULL, 0, 1, 3), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], c, sizeof c, 1, 4), 0);
    memset(b, 0xee, sizeof b); /* copied at the call */
    is_int(tn_outs_in_use(T.e[0]), 1);
    quay_action act;
    is_int(quay_next_action(T.e[0], &act), 1);
    is_int(act.kind, QUAY_ACT_SEND);
    is_int(act.peer, 1);
    is_int(act.iovcnt, 2);
    is_size(act.iov[0].len, 32 + 8);
    is_size(act.iov[1].len, (8 + 64) + 8 + (8 + 3));
    quay_action none;
    is_int(quay_next_action(T.e[0], &none), 0);
    uint8_t pkt[512];
    size_t len = act.iov[0].len + act.iov[1].len;
    memcpy(pkt, act.iov[0].base, act.iov[0].len);
    memcpy(pkt + act.iov[0].len, act.iov[1].base, act.iov[1].len);
    uint32_t seq[64];
    int32_t tag[64];
    is_int(train_walk(pkt, len, seq, tag), 4);
    is_int(wire_get16(pkt + 2), WIRE_F_MORE);
    is_int(train_shape(pkt, len), 4);
    for (int i = 0; i < 4; i++) {
        is_int(seq[i], (uint32_t)i);
        is_int(tag[i], i + 1);
    }
    /* receives posted for two, the others late */
    uint8_t ra[8], rb[64], rc[3];
    quay_req *r[4];
    is_int(quay_irecv(T.e[1], T.world[1], ra, sizeof ra, 0, 1, &r[0]), 0);
    is_int(quay_irecv(T.e[1], T.world[1], NULL, 0, 0, 3, &r[2]), 0);
    is_int(quay_on_packet(T.e[1], 0, pkt, len), 0);
    is_int(quay_on_op_done(T.e[0], act.token, 0), 0);
    is_int(tn_outs_in_use(T.e[0]), 0);
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 2, &r[1]), 0);
    is_int(quay_irecv(T.e[1], T.world[1], rc, sizeof rc, 0, 4, &r[3]), 0);
    tn_pump(&T);
    ok(tn_good(r[0], 8) && memcmp(ra, a, 8) == 0);
    tn_fill(b, sizeof b, 2);
    ok(tn_good(r[1], 64) && memcmp(rb, b, 64) == 0);
    ok(tn_good(r[2], 0));
    ok(tn_good(r[3], 3) && memcmp(rc, c, 3) == 0);
    for (int i = 0; i < 4; i++)
        quay_req_free(T.e[1], r[i]);
    tn_check_clean(&T);
    is_int(T.rejects, 0);
    tn_fini(&T);
}

/* Bounds: only the queue's tail to the same peer on the same
 * communicator grows; a train stops at max_packet (testnet: 68 + 256) and
 * at QUAY_TRAIN_MAX; a pulled packet takes no more; QUAY_CFG_NO_COALESCE:
 * one packet per send. */
static void t_bounds(void)
{
    net_init(3, NULL);
    uint8_t v[64] = {0};
    /* 1, 1, 2, 2, 1: three packets (1+1, 2+2, 1) */
    int to[5] = {1, 1, 2, 2, 1};
    for (int i = 0; i < 5; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], v, 8, to[i], i), 0);
    is_int(tn_pull(&T, 0), 3);
    is_int(npkts(0, 1), 2);
    is_int(npkts(0, 2), 1);
    /* pulled: the next send starts a new packet */
    is_int(quay_send_inline(T.e[0], T.world[0], v, 8, 1, 5), 0);
    is_int(tn_pull(&T, 0), 1);
    /* 64-byte payloads (96 bytes as a first message, 72 as a piece):
     * max_packet 324 takes four per packet (312 bytes) */
    for (int i = 0; i < 7; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], v, 64, 2, 10 + i), 0);
    int before = T.nq;
    is_int(tn_pull(&T, 0), 2);
    for (int i = before; i < T.nq; i++)
        ok(T.q[i].len <= 324);
    is_size(T.q[before].len, 96 + 3 * 72);
    is_size(T.q[before + 1].len, 96 + 2 * 72);
    /* another communicator to the same peer: a packet of its own (a
     * piece carries the first message's context), then the world's again */
    quay_comm *dup[3];
    for (int r = 0; r < 3; r++)
        is_int(quay_comm_create(T.e[r], 77, 3, NULL, &dup[r]), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], v, 8, 1, 20), 0);
    is_int(quay_send_inline(T.e[0], dup[0], v, 8, 1, 21), 0);
    is_int(quay_send_inline(T.e[0], dup[0], v, 8, 1, 22), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], v, 8, 1, 23), 0);
    before = T.nq;
    is_int(tn_pull(&T, 0), 3);
    is_size(T.q[before].len, 40);
    is_size(T.q[before + 1].len, 40 + 16);
    is_size(T.q[before + 2].len, 40);
    tn_pump(&T);
    {
        quay_req *r21, *r22;
        uint8_t rb[8];
        is_int(quay_irecv(T.e[1], dup[1], rb, 8, 0, 21, &r21), 0);
        is_int(quay_irecv(T.e[1], dup[1], rb, 8, 0, 22, &r22), 0);
        ok(tn_good(r21, 8) && tn_good(r22, 8));
        quay_req_free(T.e[1], r21);
        quay_req_free(T.e[1], r22);
    }
    for (int r = 0; r < 3; r++)
        is_int(quay_comm_free(T.e[r], dup[r]), 0);
    int got = 0;
    for (int k = 1; k <= 2; k++)
        for (;;) {
            int flag = 0;
            quay_status st;
            uint8_t rb[64];
            quay_req *r;
            is_int(quay_iprobe(T.e[k], T.world[k], 0, QUAY_ANY_TAG, &flag, &st), 0);
            if (!flag)
                break;
            is_int(quay_irecv(T.e[k], T.world[k], rb, sizeof rb, 0, st.tag, &r), 0);
            ok(tn_done(r, NULL));
            quay_req_free(T.e[k], r);
            got++;
        }
    is_int(got, 15);
    tn_check_clean(&T);
    tn_fini(&T);

    /* QUAY_TRAIN_MAX with a large max_packet: messages of 64 bytes, as
     * many as fit (96 for the first, 72 for each piece) */
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.eager_max = 4096;
    net_init(2, &cfg);
    int per = 1 + (QUAY_TRAIN_MAX - 96) / 72;
    for (int i = 0; i < 2 * per + 3; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], v, 64, 1, i), 0);
    is_int(tn_pull(&T, 0), 3);
    is_size(T.q[0].len, 96 + (size_t)(per - 1) * 72);
    is_size(T.q[1].len, 96 + (size_t)(per - 1) * 72);
    is_size(T.q[2].len, 96 + 2 * 72);
    ok(T.q[0].len <= QUAY_TRAIN_MAX && T.q[0].len + 72 > QUAY_TRAIN_MAX);
    tn_fini(&T);

    /* coalescing off */
    tn_config(&cfg, 0, 2);
    cfg.flags |= QUAY_CFG_NO_COALESCE;
    net_init(2, &cfg);
    for (int i = 0; i < 4; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], v, 8, 1, i), 0);
    is_int(tn_pull(&T, 0), 4);
    tn_fini(&T);
}

/* Wildcards, truncation and non-overtaking across a train: ANY_TAG and
 * ANY_SOURCE receives see the messages in send order; a short receive
 * truncates one message without touching the next. */
static void t_matching(void)
{
    net_init(3, NULL);
    uint8_t v[6][16];
    for (int i = 0; i < 6; i++)
        tn_fill(v[i], 16, 20 + i);
    quay_req *r[6];
    uint8_t rb[6][16];
    memset(rb, 0, sizeof rb);
    /* 0: ANY_SOURCE/ANY_TAG, 1: tag 1 short (8 bytes), 2: ANY_TAG,
     * then three late */
    is_int(quay_irecv(T.e[1], T.world[1], rb[0], 16, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &r[0]), 0);
    is_int(quay_irecv(T.e[1], T.world[1], rb[1], 8, 0, 1, &r[1]), 0);
    is_int(quay_irecv(T.e[1], T.world[1], rb[2], 16, 0, QUAY_ANY_TAG, &r[2]), 0);
    for (int i = 0; i < 6; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], v[i], 16, 1, i), 0);
    is_int(tn_pull(&T, 0), 1);
    tn_pump(&T);
    for (int i = 3; i < 6; i++)
        is_int(quay_irecv(T.e[1], T.world[1], rb[i], 16, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &r[i]),
               0);
    tn_pump(&T);
    quay_status st;
    for (int i = 0; i < 6; i++) {
        ok(tn_done(r[i], &st));
        is_int(st.tag, i);
        is_int(st.source, 0);
        is_int(st.error, i == 1 ? QUAY_ETRUNCATE : 0);
        ok(memcmp(rb[i], v[i], i == 1 ? 8 : 16) == 0);
        quay_req_free(T.e[1], r[i]);
    }
    tn_check_clean(&T);
    is_int(T.rejects, 0);
    tn_fini(&T);
}

/* Two trains and a single packet delivered in reverse: held, then taken
 * in send order. */
static void t_reordered(void)
{
    net_init(2, NULL);
    uint8_t v[7];
    for (int i = 0; i < 7; i++)
        v[i] = (uint8_t)(i + 1);
    for (int i = 0; i < 3; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], &v[i], 1, 1, 5), 0);
    is_int(tn_pull(&T, 0), 1);
    for (int i = 3; i < 6; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], &v[i], 1, 1, 5), 0);
    is_int(tn_pull(&T, 0), 1);
    is_int(quay_send_inline(T.e[0], T.world[0], &v[6], 1, 1, 5), 0);
    is_int(tn_pull(&T, 0), 1);
    is_int(tn_deliver(&T, 2), 0);
    is_int(tn_deliver(&T, 1), 0);
    is_int(tn_deliver(&T, 0), 0);
    uint8_t b[7] = {0};
    quay_req *r[7];
    for (int i = 0; i < 7; i++)
        is_int(quay_irecv(T.e[1], T.world[1], &b[i], 1, 0, 5, &r[i]), 0);
    tn_pump(&T);
    for (int i = 0; i < 7; i++) {
        ok(tn_good(r[i], 1));
        is_int(b[i], i + 1);
        quay_req_free(T.e[1], r[i]);
    }
    tn_check_clean(&T);
    is_int(T.rejects, 0);
    tn_fini(&T);
}

/* A receiver with room for two unexpected messages answers QUAY_EAGAIN
 * part-way through a train of five; offered again after receives are
 * posted, it takes the rest: every message once, in order. Then the same
 * with the train ahead of its turn (held messages count as taken). */
static void t_eagain(void)
{
    for (int ahead = 0; ahead < 2; ahead++) {
        quay_config cfg[2];
        for (int r = 0; r < 2; r++) {
            tn_config(&cfg[r], r, 2);
            cfg[r].max_unexpected = 4; /* held: at most half */
            cfg[r].unexpected_bytes_max = 2 * 16;
        }
        net_init_each(2, cfg, 1);
        T.keep_eagain = 1;
        uint8_t v[6][16];
        for (int i = 0; i < 6; i++)
            tn_fill(v[i], 16, 40 + i);
        if (ahead) {
            is_int(quay_send_inline(T.e[0], T.world[0], v[5], 16, 1, 9), 0);
            is_int(tn_pull(&T, 0), 1); /* seq 0, delivered last */
        }
        for (int i = 0; i < 5; i++)
            is_int(quay_send_inline(T.e[0], T.world[0], v[i], 16, 1, i), 0);
        is_int(tn_pull(&T, 0), 1);
        int train = T.nq - 1;
        is_int(tn_deliver(&T, train), QUAY_EAGAIN);
        is_int(T.nq, ahead ? 2 : 1); /* kept */
        quay_stats st;
        quay_engine_stats(T.e[1], &st);
        ok(st.umsgs_in_use >= 1 && st.umsgs_in_use <= 2);
        /* offered again with nothing freed: still EAGAIN, nothing taken twice */
        is_int(tn_deliver(&T, T.nq - 1), QUAY_EAGAIN);
        quay_stats st2;
        quay_engine_stats(T.e[1], &st2);
        is_int(st2.umsgs_in_use, st.umsgs_in_use);
        /* post every receive (the early ones match what was taken) */
        quay_req *r[6];
        uint8_t rb[6][16];
        for (int i = 0; i < 5; i++)
            is_int(quay_irecv(T.e[1], T.world[1], rb[i], 16, 0, i, &r[i]), 0);
        if (ahead)
            is_int(quay_irecv(T.e[1], T.world[1], rb[5], 16, 0, 9, &r[5]), 0);
        tn_pump(&T);
        is_int(T.nq, 0);
        for (int i = 0; i < 5 + ahead; i++) {
            ok(tn_good(r[i], 16));
            ok(memcmp(rb[i], v[i], 16) == 0);
            quay_req_free(T.e[1], r[i]);
        }
        tn_check_clean(&T);
        is_int(T.rejects, 0);
        tn_fini(&T);
    }
}

/* Build a train of n 4-byte messages of context ctx (tags 0..n-1, seq
 * from seq0) into b: 36 bytes for the first, 12 for each piece. */
static size_t make_train(uint8_t *b, int n, uint32_t seq0, uint32_t ctx)
{
    env_encode(b, QUAY_PKT_EAGER, WIRE_F_MORE, seq0, ctx, 0, 0, 0, 4);
    memset(b + WIRE_ENV_LEN, 0x40, 4);
    size_t off = WIRE_ENV_LEN + 4;
    for (int i = 1; i < n; i++) {
        piece_encode(b + off, i, 4);
        memset(b + off + WIRE_PIECE_LEN, 0x40 + i, 4);
        off += WIRE_PIECE_LEN + 4;
    }
    return off;
}

/* Malformed trains are rejected whole (QUAY_EPROTO) and take nothing;
 * a piece with a negative tag is rejected alone; the engine goes on. */
static void t_malformed(void)
{
    net_init(2, NULL);
    /* the world communicator's context: take it from a real packet */
    uint8_t x = 1;
    is_int(quay_send_inline(T.e[0], T.world[0], &x, 1, 1, 0), 0);
    is_int(tn_pull(&T, 0), 1);
    uint32_t ctx = wire_get32(T.q[0].bytes + 8);
    is_int(tn_deliver(&T, 0), 0); /* seq 0 taken (unexpected) */
    uint8_t good[256], bad[256];
    size_t n = make_train(good, 3, 1, ctx); /* 36 + 12 + 12 */
    is_size(n, 60);
    static const char *const cases[] = {
        "the first message's length past the end",
        "the first message's length leaving no piece",
        "a piece's length past the end",
        "bytes after the last piece",
        "the first message an RTS",
        "wrong version",
        "cut inside a piece's header",
        "longer than max_packet",
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    for (int k = 0; k < ncases; k++) {
        memcpy(bad, good, n);
        size_t len = n;
        switch (k) {
        case 0: wire_put64(bad + 24, 200); break;
        case 1: wire_put64(bad + 24, n - WIRE_ENV_LEN); break;
        case 2: wire_put32(bad + 36 + 4, 13); break;
        case 3: bad[len++] = 0; break;
        case 4: bad[1] = QUAY_PKT_RTS; break;
        case 5: bad[0] = WIRE_VERSION + 1; break;
        case 6: len = 36 + 12 + 5; break;
        case 7: len = 400; break;
        }
        uint8_t big[400];
        memset(big, 0, sizeof big);
        memcpy(big, bad, len < n ? len : n);
        note("%s", cases[k]);
        is_int(quay_on_packet(T.e[1], 0, len > n ? big : bad, len), QUAY_EPROTO);
        quay_stats st;
        quay_engine_stats(T.e[1], &st);
        is_int(st.umsgs_in_use, 1); /* only seq 0 */
    }
    /* a single EAGER with MORE (nothing behind it) */
    uint8_t one[40];
    make_train(one, 1, 1, ctx);
    is_int(quay_on_packet(T.e[1], 0, one, 36), QUAY_EPROTO);
    /* the good train still works */
    is_int(quay_on_packet(T.e[1], 0, good, n), 0);
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    is_int(st.umsgs_in_use, 4);
    for (int i = 0; i < 4; i++) {
        uint8_t b[4];
        quay_req *r;
        is_int(quay_irecv(T.e[1], T.world[1], b, 4, 0, QUAY_ANY_TAG, &r), 0);
        ok(tn_done(r, NULL));
        quay_req_free(T.e[1], r);
    }
    /* a piece with a negative tag (seq 5 of 4, 5, 6): rejected alone, as a
     * packet of its own would be; the message behind it waits for its
     * number (held), the one before is taken */
    n = make_train(bad, 3, 4, ctx);
    wire_put32(bad + 36, 0x80000000u);
    is_int(quay_on_packet(T.e[1], 0, bad, n), QUAY_EPROTO);
    quay_engine_stats(T.e[1], &st);
    is_int(st.umsgs_in_use, 2); /* seq 4 kept, seq 6 held */
    tn_fini(&T);

    /* inside a flow-control frame a train is refused (wire_decode: a
     * packet on its own never carries MORE): the frame, with a correct
     * CRC, is accepted by the channel, its content rejected */
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.flow = QUAY_FLOW_ACKNACK;
    net_init(2, &cfg);
    quay_req *s;
    is_int(quay_isend(T.e[0], T.world[0], &x, 1, 1, 0, QUAY_SEND_STANDARD, &s), 0);
    is_int(tn_pull(&T, 0), 1);
    uint8_t fr[512];
    size_t fl = T.q[0].len;
    memcpy(fr, T.q[0].bytes, fl);
    is_size(fl, CHAN_FRAME_LEN + 33); /* the frame, a 33-byte EAGER */
    wire_put16(fr + CHAN_FRAME_LEN + 2, WIRE_F_MORE);
    static uint32_t crc_table[256];
    crc32c_table_init(crc_table);
    wire_put32(fr + 16, 0);
    wire_put32(fr + 16, crc32c_update(crc_table, 0, fr, fl));
    tn_drop(&T, 0);
    is_int(quay_on_packet(T.e[1], 0, fr, fl), QUAY_EPROTO);
    quay_stats fst;
    quay_engine_stats(T.e[1], &fst);
    is_int(fst.umsgs_in_use, 0);
    quay_req_free(T.e[0], s);
    tn_fini(&T);
}

/* All train buffers out (pulled, no op_done): sends go one per packet;
 * the buffers come back with op_done and coalescing resumes. A peer
 * declared failed drops its queued train and returns the buffer. */
static void t_pool_and_failure(void)
{
    net_init(3, NULL);
    T.auto_done = 0;
    uint8_t v[4] = {0};
    for (int i = 0; i < 16; i++) {
        is_int(quay_send_inline(T.e[0], T.world[0], v, 4, 1, 0), 0);
        is_int(quay_send_inline(T.e[0], T.world[0], v, 4, 1, 0), 0);
        is_int(tn_pull(&T, 0), 1);
    }
    is_int(quay_send_inline(T.e[0], T.world[0], v, 4, 1, 0), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], v, 4, 1, 0), 0);
    is_int(tn_pull(&T, 0), 2); /* no buffer: two packets */
    tn_done_all(&T);
    is_int(tn_outs_in_use(T.e[0]), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], v, 4, 1, 0), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], v, 4, 1, 0), 0);
    is_int(tn_pull(&T, 0), 1);
    tn_done_all(&T);
    T.auto_done = 1;
    /* failure: the queued train to 2 is dropped, its buffer returned */
    for (int i = 0; i < 3; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], v, 4, 2, 0), 0);
    is_int(tn_outs_in_use(T.e[0]), 1);
    is_int(quay_on_peer_failed(T.e[0], 2), 0);
    is_int(tn_outs_in_use(T.e[0]), 0);
    for (int i = 0; i < 16; i++) { /* every buffer is there again */
        is_int(quay_send_inline(T.e[0], T.world[0], v, 4, 1, 0), 0);
        is_int(quay_send_inline(T.e[0], T.world[0], v, 4, 1, 0), 0);
        T.auto_done = 0;
        is_int(tn_pull(&T, 0), 1);
    }
    tn_done_all(&T);
    tn_fini(&T);
}

typedef struct trace_log {
    int out, in;
    uint32_t out_seq[8], in_seq[8];
} trace_log;

static void on_trace(void *ctx, const quay_trace_event *ev)
{
    trace_log *l = ctx;
    if (ev->kind == QUAY_TR_PKT_OUT && l->out < 8)
        l->out_seq[l->out++] = ev->seq;
    if (ev->kind == QUAY_TR_PKT_IN && l->in < 8)
        l->in_seq[l->in++] = ev->seq;
}

/* One PKT_OUT and one PKT_IN per message of a train, with its number;
 * the packet counters count the one packet. */
static void t_trace(void)
{
    net_init(2, NULL);
    trace_log lo = {0}, li = {0};
    quay_set_trace(T.e[0], on_trace, &lo);
    quay_set_trace(T.e[1], on_trace, &li);
    uint8_t v = 7;
    for (int i = 0; i < 3; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], &v, 1, 1, 0), 0);
    tn_pump(&T);
    is_int(lo.out, 3);
    is_int(li.in, 3);
    for (int i = 0; i < 3; i++) {
        is_int(lo.out_seq[i], (uint32_t)i);
        is_int(li.in_seq[i], (uint32_t)i);
    }
    quay_stats st;
    quay_engine_stats(T.e[0], &st);
    is_int(st.pkts_out, 1);
    quay_engine_stats(T.e[1], &st);
    is_int(st.pkts_in, 1);
    quay_set_trace(T.e[0], NULL, NULL);
    quay_set_trace(T.e[1], NULL, NULL);
    for (int i = 0; i < 3; i++) {
        quay_req *r;
        is_int(quay_irecv(T.e[1], T.world[1], &v, 1, 0, 0, &r), 0);
        ok(tn_good(r, 1));
        quay_req_free(T.e[1], r);
    }
    tn_check_clean(&T);
    tn_fini(&T);
}

/* A train whose pieces change pattern and size: runs of one tag taken
 * against posted receives, a tag whose receives run out (the rest kept),
 * one with none posted, empty and 40-byte payloads; then the kept ones
 * received late. Per tag, the messages arrive in send order. */
static void t_runs(void)
{
    net_init(2, NULL);
    static const int32_t tags[12] = {5, 5, 5, 6, 6, 5, 7, 5, 5, 5, 5, 5};
    static const size_t sizes[12] = {8, 0, 3, 16, 8, 40, 8, 1, 9, 8, 8, 12};
    uint8_t sb[12][40], rb[12][40];
    quay_req *r[12] = {0};
    memset(rb, 0, sizeof rb);
    for (int i = 0; i < 12; i++)
        tn_fill(sb[i], sizes[i], 60 + i);
    /* posted first: the first four of tag 5 (cap 40 each), one of tag 6 */
    int posted[12] = {1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 12; i++)
        if (posted[i])
            is_int(quay_irecv(T.e[1], T.world[1], rb[i], 40, 0, tags[i], &r[i]), 0);
    for (int i = 0; i < 12; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], sb[i], sizes[i], 1, tags[i]), 0);
    is_int(tn_pull(&T, 0), 1); /* one train */
    is_int(tn_deliver(&T, 0), 0);
    for (int i = 0; i < 12; i++)
        if (posted[i])
            ok(tn_good(r[i], sizes[i]));
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    is_int(st.umsgs_in_use, 7); /* five of tag 5, one of 6, the 7 kept */
    for (int i = 0; i < 12; i++)
        if (!posted[i])
            is_int(quay_irecv(T.e[1], T.world[1], rb[i], 40, 0, tags[i], &r[i]), 0);
    tn_pump(&T);
    for (int i = 0; i < 12; i++) {
        ok(tn_good(r[i], sizes[i]));
        ok(memcmp(rb[i], sb[i], sizes[i]) == 0);
        quay_req_free(T.e[1], r[i]);
    }
    tn_check_clean(&T);
    is_int(T.rejects, 0);
    tn_fini(&T);
}

/* Every length copy_small takes (0 to 16 bytes, at every alignment of
 * source and destination): exactly the n bytes, none around them; then
 * a train of one message of each length, half posted, half late, every
 * byte through the engine's small-payload paths. */
static void t_small_lengths(void)
{
    uint8_t src[40], dst[48];
    int exact = 1;
    for (size_t n = 0; n <= 16; n++)
        for (size_t so = 0; so < 8; so++)
            for (size_t d = 0; d < 8; d++) {
                for (size_t i = 0; i < sizeof src; i++)
                    src[i] = (uint8_t)(n * 31 + i * 7 + so);
                memset(dst, 0xEE, sizeof dst);
                copy_small(dst + 8 + d, src + so, n);
                for (size_t i = 0; i < sizeof dst; i++) {
                    int in = i >= 8 + d && i < 8 + d + n;
                    exact &= in ? dst[i] == src[so + i - 8 - d] : dst[i] == 0xEE;
                }
            }
    ok_msg(exact, "copy_small: every length 0-16 at every alignment, nothing around it");
    net_init(2, NULL);
    uint8_t sb[17][16], rb[17][16];
    quay_req *r[17] = {0};
    memset(rb, 0, sizeof rb);
    for (int n = 0; n <= 16; n++) {
        tn_fill(sb[n], (size_t)n, 80 + n);
        if (n % 2 == 0)
            is_int(quay_irecv(T.e[1], T.world[1], rb[n], 16, 0, n, &r[n]), 0);
    }
    for (int n = 0; n <= 16; n++)
        is_int(quay_send_inline(T.e[0], T.world[0], sb[n], (size_t)n, 1, n), 0);
    is_int(tn_pull(&T, 0), 1); /* one train */
    is_int(tn_deliver(&T, 0), 0);
    for (int n = 1; n <= 16; n += 2)
        is_int(quay_irecv(T.e[1], T.world[1], rb[n], 16, 0, n, &r[n]), 0);
    tn_pump(&T);
    int good = 1;
    for (int n = 0; n <= 16; n++) {
        good &= tn_good(r[n], (size_t)n) && memcmp(rb[n], sb[n], (size_t)n) == 0;
        for (int i = n; i < 16; i++)
            good &= rb[n][i] == 0; /* nothing past the message */
        quay_req_free(T.e[1], r[n]);
    }
    ok_msg(good, "a train of every length 0-16, posted and late: each intact");
    tn_check_clean(&T);
    is_int(T.rejects, 0);
    tn_fini(&T);
}

/* Every subtest with the oracle alongside, then with the fast matcher
 * alone. */
#define both(name, fn) \
    subtest_both((name), (fn), &with_oracle, "oracle alongside", "fast matcher alone")

int main(void)
{
    both("packet shape, one op_done, posted and late receives", t_shape);
    both("bounds: peer changes, pulled, max_packet, QUAY_TRAIN_MAX, off", t_bounds);
    both("wildcards, truncation, send order", t_matching);
    both("reordered on the wire", t_reordered);
    both("QUAY_EAGAIN part-way, offered again", t_eagain);
    both("malformed trains", t_malformed);
    both("train buffer pool, failed peer", t_pool_and_failure);
    both("trace and counters", t_trace);
    both("runs of patterns and sizes in one train", t_runs);
    both("every small length, copy_small and trains", t_small_lengths);
    return done_testing();
}
