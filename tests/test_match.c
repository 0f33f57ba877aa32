/*
 * test_match.c — the fast matcher (match.c) against the linear oracle
 * (match_oracle.c) and against an independent model of the MPI rules kept
 * by this test.
 *
 * A seeded random sequence of 200,000 operations on one receiving engine
 * (world rank 0 of 5) — receives (exact, and 20 % ANY_SOURCE / ANY_TAG /
 * both) over 3 communicators with different rank maps, messages from 4
 * peers with 5 tags arriving as EAGER packets (some synchronous, some
 * delivered out of order so they are held and drained), cancels, probes and
 * matched probes — is run three times: on the default fast matcher with
 * QUAY_CFG_CHECK_ORACLE (any disagreement with the oracle is the sticky
 * QUAY_EINTERNAL, which must never appear), on the fast matcher alone, and
 * with QUAY_CFG_LINEAR_MATCH. Each run's pairing (receive -> message) must
 * equal the model's prediction, and the three runs must pair identically.
 *
 * Deep queues: 10,000 posted exact receives matched in reverse order,
 * 10,000 unexpected messages received in reverse order, 10,000 receives of
 * one key in FIFO order, and wildcard-versus-exact ordering at depth.
 * And the posted bins' hash: how many of a common pattern share a bin.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/match_fast.h"
#include "engine/wire.h"
#include "harness.h"

#define NW 5     /* world: rank 0 receives, ranks 1..4 send */
#define NCOMM 3
#define NTAGS 5
#define NOPS 200000
#define CANCELLED UINT64_MAX

static const int32_t MAPS[NCOMM][NW] = {
    {0, 1, 2, 3, 4},
    {4, 0, 3, 1, 2}, /* rank 0 is comm rank 1 */
    {2, 3, 0, 4, 1}, /* rank 0 is comm rank 2 */
};
static const uint32_t CTX[NCOMM] = {100, 7, 0x7FFFFFFFu}; /* (2^31 and up: collectives) */

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

static uint32_t below(rng *r, uint32_t n) { return (uint32_t)(rng_next(r) % n); }

/* Comm rank of world rank w in communicator c. */
static int32_t comm_rank(int c, int32_t w)
{
    for (int32_t j = 0; j < NW; j++)
        if (MAPS[c][j] == w)
            return j;
    return -1;
}

/* ---- the receiving engine and the packets it gets ------------------------------ */

typedef struct rx {
    quay_engine *e;
    quay_comm *c[NCOMM];
    uint32_t tx[NW]; /* next sequence number per sending peer */
    long bad_rc;     /* calls that returned an unexpected code */
    long nacks;      /* ACK actions emitted */
    int fatal;
} rx;

static int rx_new(rx *x, uint32_t flags, uint32_t depth)
{
    memset(x, 0, sizeof *x);
    quay_config cfg;
    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    cfg.flags |= flags;
    cfg.rank = 0;
    cfg.nranks = NW;
    cfg.max_requests = depth;
    cfg.max_unexpected = depth;
    cfg.max_ctrl = 4096;
    int rc = quay_engine_new(&cfg, &x->e);
    for (int c = 0; c < NCOMM && rc == 0; c++)
        rc = quay_comm_create(x->e, CTX[c], NW, MAPS[c], &x->c[c]);
    return rc;
}

/* An EAGER packet from world rank w on comm c carrying the 8-byte id. */
static size_t build_eager(rx *x, int w, int c, int32_t tag, uint64_t id, int sync,
                          uint8_t *out)
{
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = QUAY_PKT_EAGER;
    h.flags = sync ? WIRE_F_SYNC : 0;
    h.seq = x->tx[w]++;
    h.ctx = CTX[c];
    h.src = comm_rank(c, w);
    h.tag = tag;
    h.sreq = sync ? (uint32_t)(id % 0xfffffff0u) + 1 : 0;
    h.len = 8;
    size_t hl = wire_encode(&h, out);
    memcpy(out + hl, &id, 8);
    return hl + 8;
}

static void rx_offer(rx *x, int w, const uint8_t *b, size_t len)
{
    int rc = quay_on_packet(x->e, w, b, len);
    if (rc != 0) {
        if (x->bad_rc++ < 5)
            note("quay_on_packet from %d: %s", w, quay_strerror(rc));
        if (quay_err_is_fatal(rc))
            x->fatal = rc;
    }
}

/* ---- the random sequence ---------------------------------------------------------- */

typedef struct mrecv {
    uint32_t idx;
    int comm;
    int32_t src, tag;
} mrecv;

typedef struct mmsg {
    uint64_t id;
    int comm;
    int32_t src, tag;
} mmsg;

typedef struct seqrun {
    rx x;
    rng r;
    /* the model */
    mrecv *posted;
    uint32_t nposted;
    mmsg *unexp;
    uint32_t nunexp;
    mmsg *msgs; /* every message by id */
    uint64_t nmsgs;
    /* per receive index */
    uint64_t *predicted; /* message id + 1, CANCELLED, or 0 while pending */
    uint64_t *got;
    uint64_t *rbuf;
    quay_req **req;
    uint32_t nrecv;
    /* held back packets, one per peer */
    int has_delay[NW];
    uint8_t dbuf[NW][64];
    size_t dlen[NW];
    uint64_t did[NW];
    /* statistics */
    long n_exact, n_anysrc, n_anytag, n_anyboth, n_arrive, n_held, n_cancel, n_probe,
        n_mprobe, n_sync, probe_mismatch, status_mismatch, max_posted, max_unexp;
} seqrun;

#define MAXRECV (NOPS + 64)

static int pat_ok(int32_t psrc, int32_t ptag, int32_t src, int32_t tag)
{
    return (psrc == QUAY_ANY_SOURCE || psrc == src) && (ptag == QUAY_ANY_TAG || ptag == tag);
}

/* Model: a message is processed (in its sender's order). */
static void model_arrive(seqrun *s, uint64_t id)
{
    const mmsg *m = &s->msgs[id];
    for (uint32_t i = 0; i < s->nposted; i++) {
        mrecv *p = &s->posted[i];
        if (p->comm == m->comm && pat_ok(p->src, p->tag, m->src, m->tag)) {
            s->predicted[p->idx] = id + 1;
            memmove(p, p + 1, (s->nposted - i - 1) * sizeof *p);
            s->nposted--;
            return;
        }
    }
    s->unexp[s->nunexp++] = *m;
    if ((long)s->nunexp > s->max_unexp)
        s->max_unexp = s->nunexp;
}

/* Model: the oldest unexpected message matching (c, src, tag), or -1. */
static long model_find_unexp(const seqrun *s, int c, int32_t src, int32_t tag)
{
    for (uint32_t i = 0; i < s->nunexp; i++)
        if (s->unexp[i].comm == c && pat_ok(src, tag, s->unexp[i].src, s->unexp[i].tag))
            return (long)i;
    return -1;
}

static void model_take_unexp(seqrun *s, long i)
{
    memmove(&s->unexp[i], &s->unexp[i + 1], (s->nunexp - (size_t)i - 1) * sizeof *s->unexp);
    s->nunexp--;
}

/* A random receive pattern on comm c: 20 % wildcards. */
static void pick_pattern(seqrun *s, int c, int32_t *src, int32_t *tag, int count)
{
    uint32_t k = below(&s->r, 100);
    int32_t w = 1 + (int32_t)below(&s->r, NW - 1);
    int32_t t = (int32_t)below(&s->r, NTAGS);
    if (k < 7) {
        *src = QUAY_ANY_SOURCE;
        *tag = t;
        s->n_anysrc += count;
    } else if (k < 14) {
        *src = comm_rank(c, w);
        *tag = QUAY_ANY_TAG;
        s->n_anytag += count;
    } else if (k < 20) {
        *src = QUAY_ANY_SOURCE;
        *tag = QUAY_ANY_TAG;
        s->n_anyboth += count;
    } else {
        *src = comm_rank(c, w);
        *tag = t;
        s->n_exact += count;
    }
}

/* Pull every action: COMPLETE records the pairing, SEND (ACK) is done. */
static void drain(seqrun *s)
{
    quay_action a;
    int rc;
    while ((rc = quay_next_action(s->x.e, &a)) == 1) {
        if (a.kind == QUAY_ACT_SEND) {
            s->x.nacks++;
            quay_on_op_done(s->x.e, a.token, 0);
            continue;
        }
        uint32_t idx = (uint32_t)((uintptr_t)a.user - 1);
        quay_status st;
        quay_req_test(a.req, &st);
        if (st.cancelled) {
            s->got[idx] = CANCELLED;
        } else {
            uint64_t id = s->rbuf[idx];
            s->got[idx] = id + 1;
            if (id >= s->nmsgs || st.error != 0 || st.count != 8 ||
                st.source != s->msgs[id].src || st.tag != s->msgs[id].tag)
                s->status_mismatch++;
        }
        quay_req_free(s->x.e, a.req);
        s->req[idx] = NULL;
    }
    if (rc != 0) {
        s->x.bad_rc++;
        if (quay_err_is_fatal(rc))
            s->x.fatal = rc;
    }
}

static void op_irecv(seqrun *s, int c, int32_t src, int32_t tag)
{
    uint32_t idx = s->nrecv++;
    int rc = quay_irecv(s->x.e, s->x.c[c], &s->rbuf[idx], 8, src, tag, &s->req[idx]);
    if (rc != 0) {
        if (s->x.bad_rc++ < 5)
            note("irecv: %s", quay_strerror(rc));
        if (quay_err_is_fatal(rc))
            s->x.fatal = rc;
        return;
    }
    quay_req_set_user(s->req[idx], (void *)(uintptr_t)(idx + 1));
    long u = model_find_unexp(s, c, src, tag);
    if (u >= 0) {
        s->predicted[idx] = s->unexp[u].id + 1;
        model_take_unexp(s, u);
    } else {
        s->posted[s->nposted++] = (mrecv){idx, c, src, tag};
        if ((long)s->nposted > s->max_posted)
            s->max_posted = s->nposted;
    }
}

static void op_arrive(seqrun *s)
{
    int32_t w = 1 + (int32_t)below(&s->r, NW - 1);
    int c = (int)below(&s->r, NCOMM);
    int32_t tag = (int32_t)below(&s->r, NTAGS);
    int sync = below(&s->r, 8) == 0;
    uint64_t id = s->nmsgs++;
    s->msgs[id] = (mmsg){id, c, comm_rank(c, w), tag};
    s->n_arrive++;
    s->n_sync += sync;
    uint8_t b[64];
    size_t n = build_eager(&s->x, w, c, tag, id, sync, b);
    if (!s->has_delay[w] && below(&s->r, 10) == 0) {
        /* Hold it back: the next packet from w overtakes it. */
        s->has_delay[w] = 1;
        memcpy(s->dbuf[w], b, n);
        s->dlen[w] = n;
        s->did[w] = id;
        return;
    }
    rx_offer(&s->x, w, b, n);
    if (s->has_delay[w]) {
        s->n_held++;
        rx_offer(&s->x, w, s->dbuf[w], s->dlen[w]);
        model_arrive(s, s->did[w]);
        s->has_delay[w] = 0;
    }
    model_arrive(s, id);
}

static void op_cancel(seqrun *s)
{
    if (s->nposted == 0)
        return;
    uint32_t j = below(&s->r, s->nposted);
    uint32_t idx = s->posted[j].idx;
    s->n_cancel++;
    if (s->req[idx] == NULL || quay_cancel(s->x.e, s->req[idx]) != 0)
        s->x.bad_rc++;
    memmove(&s->posted[j], &s->posted[j + 1], (s->nposted - j - 1) * sizeof *s->posted);
    s->nposted--;
    s->predicted[idx] = CANCELLED;
}

static void op_probe(seqrun *s, int matched)
{
    int c = (int)below(&s->r, NCOMM);
    int32_t src, tag;
    pick_pattern(s, c, &src, &tag, 0);
    long u = model_find_unexp(s, c, src, tag);
    quay_status st;
    memset(&st, 0, sizeof st);
    if (!matched) {
        int flag = -1;
        s->n_probe++;
        if (quay_iprobe(s->x.e, s->x.c[c], src, tag, &flag, &st) != 0)
            s->x.bad_rc++;
        if (flag != (u >= 0) ||
            (u >= 0 && (st.source != s->unexp[u].src || st.tag != s->unexp[u].tag ||
                        st.count != 8)))
            s->probe_mismatch++;
        return;
    }
    quay_msg *m = NULL;
    s->n_mprobe++;
    if (quay_improbe(s->x.e, s->x.c[c], src, tag, &m, &st) != 0)
        s->x.bad_rc++;
    if ((m != NULL) != (u >= 0)) {
        s->probe_mismatch++;
        return;
    }
    if (m == NULL)
        return;
    if (st.source != s->unexp[u].src || st.tag != s->unexp[u].tag)
        s->probe_mismatch++;
    uint32_t idx = s->nrecv++;
    s->predicted[idx] = s->unexp[u].id + 1;
    model_take_unexp(s, u);
    if (quay_imrecv(s->x.e, m, &s->rbuf[idx], 8, &s->req[idx]) != 0) {
        s->x.bad_rc++;
        return;
    }
    quay_req_set_user(s->req[idx], (void *)(uintptr_t)(idx + 1));
}

static int seqrun_alloc(seqrun *s)
{
    memset(s, 0, sizeof *s);
    s->posted = calloc(MAXRECV, sizeof *s->posted);
    s->unexp = calloc(NOPS + 64, sizeof *s->unexp);
    s->msgs = calloc(NOPS + 64, sizeof *s->msgs);
    s->predicted = calloc(MAXRECV, sizeof *s->predicted);
    s->got = calloc(MAXRECV, sizeof *s->got);
    s->rbuf = calloc(MAXRECV, sizeof *s->rbuf);
    s->req = calloc(MAXRECV, sizeof *s->req);
    return s->posted && s->unexp && s->msgs && s->predicted && s->got && s->rbuf && s->req;
}

static void seqrun_free(seqrun *s)
{
    quay_engine_free(s->x.e);
    free(s->posted);
    free(s->unexp);
    free(s->msgs);
    free(s->predicted);
    free(s->rbuf);
    free(s->req);
    /* s->got is handed to the caller */
}

/*
 * Run the operation sequence on an engine with `flags`; returns the
 * pairing (receive index -> message id + 1 or CANCELLED), *nrecv set.
 */
static uint64_t *run_sequence(uint32_t flags, const char *name, uint32_t *nrecv)
{
    seqrun *s = malloc(sizeof *s);
    if (!ok_msg(s && seqrun_alloc(s), "%s: memory", name))
        return NULL;
    s->r.s = 0x5eed5eed12345678ull;
    if (!is_int(rx_new(&s->x, flags, 4096), 0))
        return NULL;
    for (long op = 0; op < NOPS && !s->x.fatal; op++) {
        /* Alternate receive-heavy and arrival-heavy phases so that both
         * queues get deep, within bounds. */
        uint32_t p_recv = (op / 4000) % 2 ? 62 : 30;
        if (s->nposted > 300)
            p_recv = 15;
        else if (s->nunexp > 300)
            p_recv = 80;
        uint32_t k = below(&s->r, 100);
        if (k < p_recv) {
            int c = (int)below(&s->r, NCOMM);
            int32_t src, tag;
            pick_pattern(s, c, &src, &tag, 1);
            op_irecv(s, c, src, tag);
        } else if (k < 90) {
            op_arrive(s);
        } else if (k < 94) {
            op_cancel(s);
        } else if (k < 97) {
            op_probe(s, 0);
        } else {
            op_probe(s, 1);
        }
        drain(s);
    }
    /* Wind down: release held-back packets, cancel what is posted,
     * receive what is unexpected. */
    for (int w = 1; w < NW; w++) {
        if (s->has_delay[w]) {
            rx_offer(&s->x, w, s->dbuf[w], s->dlen[w]);
            model_arrive(s, s->did[w]);
            s->has_delay[w] = 0;
        }
    }
    drain(s);
    while (s->nposted > 0) {
        uint32_t idx = s->posted[0].idx;
        if (s->req[idx] == NULL || quay_cancel(s->x.e, s->req[idx]) != 0)
            s->x.bad_rc++;
        s->predicted[idx] = CANCELLED;
        memmove(&s->posted[0], &s->posted[1], (s->nposted - 1) * sizeof *s->posted);
        s->nposted--;
    }
    drain(s);
    for (int c = 0; c < NCOMM; c++)
        while (model_find_unexp(s, c, QUAY_ANY_SOURCE, QUAY_ANY_TAG) >= 0) {
            op_irecv(s, c, QUAY_ANY_SOURCE, QUAY_ANY_TAG);
            drain(s);
            if (s->x.fatal || s->x.bad_rc > 100)
                break;
        }
    drain(s);

    note("%s: %u receives (%ld exact, %ld ANY_SOURCE, %ld ANY_TAG, %ld both), "
         "%ld messages (%ld sync, %ld overtaken), %ld cancels, %ld probes, %ld mprobes, "
         "max depth posted %ld unexpected %ld, %ld ACKs",
         name, s->nrecv, s->n_exact, s->n_anysrc, s->n_anytag, s->n_anyboth, s->n_arrive,
         s->n_sync, s->n_held, s->n_cancel, s->n_probe, s->n_mprobe, s->max_posted,
         s->max_unexp, s->x.nacks);
    ok_msg(s->x.fatal == 0, "%s: never fatal (%s)", name, quay_strerror(s->x.fatal));
    is_int(s->x.bad_rc, 0);
    long mismatch = 0, pending = 0;
    for (uint32_t i = 0; i < s->nrecv; i++) {
        if (s->got[i] == 0)
            pending++;
        if (s->got[i] != s->predicted[i] && mismatch++ < 5)
            note("%s: receive %u got %llu, model says %llu", name, i,
                 (unsigned long long)s->got[i], (unsigned long long)s->predicted[i]);
    }
    ok_msg(mismatch == 0, "%s: pairing equals the MPI model (%ld differ)", name, mismatch);
    is_int(pending, 0);
    is_int(s->probe_mismatch, 0);
    is_int(s->status_mismatch, 0);
    ok_msg(s->nrecv >= 80000 && s->n_arrive >= 80000 &&
               s->n_anysrc + s->n_anytag + s->n_anyboth > 15000 && s->max_posted >= 200 &&
               s->max_unexp >= 200,
           "%s: the sequence is big, mixed and deep", name);
    quay_stats st;
    quay_engine_stats(s->x.e, &st);
    ok_msg(st.reqs_in_use == 0 && st.umsgs_in_use == 0 && st.held_out_of_order == 0 &&
               st.bytes_unexpected == 0 && st.ctrl_queued == 0 && st.outs_in_use == 0 &&
               st.pkts_rejected == 0,
           "%s: engine clean at the end", name);
    *nrecv = s->nrecv;
    uint64_t *got = s->got;
    seqrun_free(s);
    free(s);
    return got;
}

static void t_random_sequence(void)
{
    uint32_t n1 = 0, n2 = 0, n3 = 0;
    uint64_t *checked = run_sequence(QUAY_CFG_CHECK_ORACLE, "fast + oracle check", &n1);
    uint64_t *fast = run_sequence(0, "fast", &n2);
    uint64_t *linear = run_sequence(QUAY_CFG_LINEAR_MATCH, "linear", &n3);
    if (checked && fast && linear) {
        ok(n1 == n3 && n2 == n3);
        ok_msg(memcmp(checked, linear, (size_t)n3 * sizeof *linear) == 0,
               "default engine (with oracle check) pairs exactly as LINEAR_MATCH");
        ok_msg(memcmp(fast, linear, (size_t)n3 * sizeof *linear) == 0,
               "default engine pairs exactly as LINEAR_MATCH");
    }
    free(checked);
    free(fast);
    free(linear);
}

/* ---- deep queues ------------------------------------------------------------------ */

#define DEEP 10000

typedef struct deep {
    rx x;
    uint64_t rbuf[DEEP + 16];
    quay_req *req[DEEP + 16];
} deep;

static void deep_send(deep *d, int32_t tag, uint64_t payload)
{
    uint8_t b[64];
    size_t n = build_eager(&d->x, 1, 0, tag, payload, 0, b);
    rx_offer(&d->x, 1, b, n);
}

/* The receive completed with `payload` and `tag`. */
static int deep_got(const deep *d, int i, uint64_t payload, int32_t tag)
{
    quay_status st;
    return quay_req_test(d->req[i], &st) && st.error == 0 && st.count == 8 &&
           st.tag == tag && st.source == 1 && d->rbuf[i] == payload;
}

static void deep_free_reqs(deep *d, int n)
{
    quay_action a;
    while (quay_next_action(d->x.e, &a) == 1)
        if (a.kind == QUAY_ACT_SEND)
            quay_on_op_done(d->x.e, a.token, 0);
    for (int i = 0; i < n; i++) {
        if (d->req[i] != NULL)
            quay_req_free(d->x.e, d->req[i]);
        d->req[i] = NULL;
    }
}

static void deep_run(uint32_t flags, const char *name)
{
    deep *d = calloc(1, sizeof *d);
    if (!ok(d != NULL) || !is_int(rx_new(&d->x, flags, 16384), 0)) {
        free(d);
        return;
    }
    quay_comm *c = d->x.c[0];
    int bad;

    /* 10,000 posted exact receives (distinct tags), matched in reverse. */
    for (int i = 0; i < DEEP; i++)
        quay_irecv(d->x.e, c, &d->rbuf[i], 8, 1, i, &d->req[i]);
    for (int i = DEEP - 1; i >= 0; i--)
        deep_send(d, i, 1000000u + (uint64_t)i);
    bad = 0;
    for (int i = 0; i < DEEP; i++)
        bad += !deep_got(d, i, 1000000u + (uint64_t)i, i);
    ok_msg(bad == 0, "%s: 10,000 posted receives matched in reverse (%d wrong)", name, bad);
    deep_free_reqs(d, DEEP);

    /* 10,000 unexpected messages (distinct tags), received in reverse. */
    for (int i = 0; i < DEEP; i++)
        deep_send(d, i, 2000000u + (uint64_t)i);
    bad = 0;
    for (int i = DEEP - 1; i >= 0; i--) {
        quay_irecv(d->x.e, c, &d->rbuf[i], 8, 1, i, &d->req[i]);
        bad += !deep_got(d, i, 2000000u + (uint64_t)i, i);
    }
    ok_msg(bad == 0, "%s: 10,000 unexpected messages received in reverse (%d wrong)", name,
           bad);
    deep_free_reqs(d, DEEP);

    /* 10,000 receives of one key: first posted, first matched. */
    for (int i = 0; i < DEEP; i++)
        quay_irecv(d->x.e, c, &d->rbuf[i], 8, 1, 7, &d->req[i]);
    for (int i = 0; i < DEEP; i++)
        deep_send(d, 7, 3000000u + (uint64_t)i);
    bad = 0;
    for (int i = 0; i < DEEP; i++)
        bad += !deep_got(d, i, 3000000u + (uint64_t)i, 7);
    ok_msg(bad == 0, "%s: 10,000 receives of one key in FIFO order (%d wrong)", name, bad);
    deep_free_reqs(d, DEEP);

    /* Wildcard between two deep runs of exact receives: a message takes
     * whichever matching receive was posted first. */
    int half = DEEP / 2, w = DEEP;
    for (int i = 0; i < half; i++)
        quay_irecv(d->x.e, c, &d->rbuf[i], 8, 1, i, &d->req[i]);
    quay_irecv(d->x.e, c, &d->rbuf[w], 8, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &d->req[w]);
    for (int i = half; i < DEEP; i++)
        quay_irecv(d->x.e, c, &d->rbuf[i], 8, 1, i, &d->req[i]);
    deep_send(d, 7000, 4007000u); /* wildcard is older than exact 7000 */
    deep_send(d, 2000, 4002000u); /* exact 2000 is older than any wildcard */
    deep_send(d, 7000, 4007001u); /* now the exact one */
    ok_msg(deep_got(d, w, 4007000u, 7000), "%s: wildcard posted before exact wins", name);
    ok_msg(deep_got(d, 2000, 4002000u, 2000), "%s: exact posted before wildcard wins", name);
    ok_msg(deep_got(d, 7000, 4007001u, 7000), "%s: then the exact receive", name);
    for (int i = 0; i < DEEP; i++)
        if (i != 2000 && i != 7000)
            deep_send(d, i, 5000000u + (uint64_t)i);
    bad = 0;
    for (int i = 0; i < DEEP; i++)
        if (i != 2000 && i != 7000)
            bad += !deep_got(d, i, 5000000u + (uint64_t)i, i);
    ok_msg(bad == 0, "%s: the other 9,998 exact receives (%d wrong)", name, bad);
    deep_free_reqs(d, DEEP + 1);

    ok_msg(d->x.fatal == 0 && d->x.bad_rc == 0, "%s: no error (%ld, %s)", name, d->x.bad_rc,
           quay_strerror(d->x.fatal));
    quay_stats st;
    quay_action a;
    quay_engine_stats(d->x.e, &st);
    ok_msg(st.reqs_in_use == 0 && st.umsgs_in_use == 0 && quay_next_action(d->x.e, &a) == 0,
           "%s: engine clean and healthy", name);
    quay_engine_free(d->x.e);
    free(d);
}

static void t_deep_checked(void) { deep_run(QUAY_CFG_CHECK_ORACLE, "fast + oracle check"); }
static void t_deep_linear(void) { deep_run(QUAY_CFG_LINEAR_MATCH, "linear"); }

/* The posted bins' hash (match_fast.h) spreads the patterns programs
 * post: sequential sources, sequential tags, sources or tags a multiple of
 * the bins' count apart, both wildcards, a grid, many contexts. At most
 * SPREAD_MAX patterns share a bin (a uniform hash puts 5 or 6 in the
 * fullest of n bins for n keys; an unfolded multiply put all 64 strided
 * sources in one). */
#define SPREAD_MAX 8
static uint32_t fullest_bin(uint32_t nbins, uint64_t seed, int pattern, uint32_t n)
{
    static uint16_t count[1u << 14];
    memset(count, 0, sizeof count);
    quay_comm c;
    memset(&c, 0, sizeof c);
    uint32_t most = 0;
    for (uint32_t i = 0; i < n; i++) {
        int32_t src = 0, tag = 0;
        uint32_t ctx = 0;
        switch (pattern) {
        case 0: src = (int32_t)i; break;
        case 1: tag = (int32_t)i; break;
        case 2: src = (int32_t)(i * nbins); break;
        case 3: tag = (int32_t)(i * nbins); break;
        case 4: tag = (int32_t)(i << 16); break;
        case 5: src = QUAY_ANY_SOURCE; tag = (int32_t)i; break;
        case 6: src = (int32_t)i; tag = QUAY_ANY_TAG; break;
        case 7: src = (int32_t)(i % 32); tag = (int32_t)(i / 32); break;
        default: ctx = i; break;
        }
        c.ctx = ctx;
        c.hkey = comm_hkey(seed, ctx);
        uint32_t b = match_posted_hash(&c, src, tag) & (nbins - 1);
        if (++count[b] > most)
            most = count[b];
    }
    return most;
}

static void t_posted_spread(void)
{
    static const uint64_t seeds[3] = {0, 0xF00D, 0x1cbe991a83ull};
    static const uint32_t nbins[4] = {64, 256, 1024, 16384};
    static const char *names[9] = {"sources", "tags", "sources nbins apart",
                                   "tags nbins apart", "tags 65536 apart",
                                   "ANY_SOURCE, tags", "sources, ANY_TAG",
                                   "32 sources x tags", "contexts"};
    for (int p = 0; p < 9; p++) {
        uint32_t worst = 0;
        for (int si = 0; si < 3; si++)
            for (int bi = 0; bi < 4; bi++) {
                /* strided patterns: 64 keys (more would overflow int32) */
                uint32_t n = p >= 2 && p <= 4 ? 64 : nbins[bi] < 4096 ? nbins[bi] : 4096;
                uint32_t m = fullest_bin(nbins[bi], seeds[si], p, n);
                if (m > worst)
                    worst = m;
            }
        ok_msg(worst <= SPREAD_MAX, "posted bins, %s: at most %u per bin (fullest %u)", names[p],
           SPREAD_MAX, worst);
    }
}

int main(void)
{
    subtest("random sequence: fast == oracle == linear == model", t_random_sequence);
    subtest("deep queues, fast matcher checked by the oracle", t_deep_checked);
    subtest("deep queues, linear matcher", t_deep_linear);
    subtest("posted bins' hash spreads common patterns", t_posted_spread);
    return done_testing();
}
