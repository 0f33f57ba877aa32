/* testnet.c — see testnet.h. */
#include "testnet.h"

#include "harness.h"

#include <stdlib.h>
#include <string.h>

void tn_config(quay_config *cfg, int r, int n)
{
    quay_config_default(cfg);
    memset(cfg->key_secret, 0x5a, sizeof cfg->key_secret); /* (tests: any fixed secret) */
    cfg->rank = r;
    cfg->nranks = n;
    cfg->eager_max = 256;
    cfg->frag_size = 128;
    cfg->pipeline_depth = 2;
    cfg->max_requests = 256;
    cfg->max_unexpected = 256;
    cfg->max_out = 256;
    cfg->flags |= QUAY_CFG_CHECK_ORACLE;
}

int tn_init(testnet *t, int n, const quay_config *cfg)
{
    return tn_init_each(t, n, cfg, 0);
}

int tn_init_each(testnet *t, int n, const quay_config *cfg, int per_rank)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    t->auto_done = 1;
    for (int r = 0; r < n; r++) {
        quay_config c;
        if (cfg != NULL) {
            c = cfg[per_rank ? r : 0];
        } else {
            tn_config(&c, r, n);
        }
        c.rank = r;
        c.nranks = n;
        int rc = quay_engine_new(&c, &t->e[r]);
        if (rc != 0)
            return rc;
        rc = quay_comm_create(t->e[r], 0, n, NULL, &t->world[r]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void tn_fini(testnet *t)
{
    for (int i = 0; i < t->nq; i++)
        free(t->q[i].bytes);
    for (int r = 0; r < t->n; r++)
        quay_engine_free(t->e[r]);
    memset(t, 0, sizeof *t);
}

int tn_pull(testnet *t, int r)
{
    quay_action a;
    int sends = 0;
    int rc;
    while ((rc = quay_next_action(t->e[r], &a)) == 1) {
        if (a.kind == QUAY_ACT_COMPLETE) {
            t->ncomplete[r]++;
            continue;
        }
        if (a.kind == QUAY_ACT_NOTIFY)
            continue; /* a hint: every engine here is polled anyway */
        if (t->nq == TN_MAX_PKTS)
            abort();
        if (a.kind == QUAY_ACT_RDMA_PUT || a.kind == QUAY_ACT_RDMA_GET) {
            tn_pkt *p = &t->q[t->nq++];
            memset(p, 0, sizeof *p);
            p->from = r;
            p->to = a.peer;
            p->rdma = a.kind;
            p->key = a.rdma.key;
            p->off = a.rdma.offset;
            p->local = a.rdma.local;
            p->len = (size_t)a.rdma.len;
            p->bytes = malloc(p->len ? p->len : 1);
            if (a.kind == QUAY_ACT_RDMA_PUT && p->len != 0)
                memcpy(p->bytes, a.rdma.local, p->len);
            p->token = a.token;
            sends++;
            continue;
        }
        if (a.kind != QUAY_ACT_SEND)
            abort();
        tn_pkt *p = &t->q[t->nq++];
        p->rdma = 0;
        p->from = r;
        p->to = a.peer;
        p->len = 0;
        for (uint32_t i = 0; i < a.iovcnt; i++)
            p->len += a.iov[i].len;
        p->bytes = malloc(p->len ? p->len : 1);
        size_t off = 0;
        for (uint32_t i = 0; i < a.iovcnt; i++) {
            memcpy(p->bytes + off, a.iov[i].base, a.iov[i].len);
            off += a.iov[i].len;
        }
        p->token = a.token;
        p->done = 0;
        if (t->auto_done) {
            quay_on_op_done(t->e[r], a.token, 0);
            p->done = 1;
        }
        sends++;
    }
    t->last_rc = rc;
    return sends;
}

int tn_pull_all(testnet *t)
{
    int s = 0;
    for (int r = 0; r < t->n; r++)
        s += tn_pull(t, r);
    return s;
}

/* Execute an RDMA operation at its target; op_done with the outcome. */
static int tn_rdma(testnet *t, tn_pkt *p)
{
    int put = p->rdma == QUAY_ACT_RDMA_PUT;
    void *addr;
    int rc = quay_mem_resolve(t->e[p->to], p->from, p->key, p->off, p->len,
                              put ? QUAY_MEM_WRITE : QUAY_MEM_READ, &addr);
    if (rc == 0 && p->len != 0) {
        if (put)
            memcpy(addr, p->bytes, p->len);
        else
            memcpy(p->local, addr, p->len);
    }
    if (rc != 0)
        t->rejects++;
    quay_on_op_done(t->e[p->from], p->token, rc);
    free(p->bytes);
    return 0;
}

int tn_deliver(testnet *t, int i)
{
    tn_pkt p = t->q[i];
    memmove(&t->q[i], &t->q[i + 1], (size_t)(t->nq - i - 1) * sizeof t->q[0]);
    t->nq--;
    if (p.rdma)
        return tn_rdma(t, &p);
    if (!p.done)
        quay_on_op_done(t->e[p.from], p.token, 0);
    int rc = quay_on_packet(t->e[p.to], p.from, p.bytes, p.len);
    if (rc == QUAY_EAGAIN && t->keep_eagain && t->nq < TN_MAX_PKTS) {
        p.done = 1; /* offered again later, after the others */
        t->q[t->nq++] = p;
        return rc;
    }
    if (rc == QUAY_EPROTO || rc == QUAY_ESTATE)
        t->rejects++;
    free(p.bytes);
    return rc;
}

void tn_drop(testnet *t, int i)
{
    if (t->q[i].rdma) {
        tn_deliver(t, i); /* reliable */
        return;
    }
    tn_pkt p = t->q[i];
    memmove(&t->q[i], &t->q[i + 1], (size_t)(t->nq - i - 1) * sizeof t->q[0]);
    t->nq--;
    if (!p.done)
        quay_on_op_done(t->e[p.from], p.token, 0);
    free(p.bytes);
}

void tn_dup(testnet *t, int i)
{
    if (t->nq == TN_MAX_PKTS)
        abort();
    if (t->q[i].rdma)
        return; /* reliable: never duplicated */
    tn_pkt *c = &t->q[t->nq++];
    *c = t->q[i];
    c->bytes = malloc(c->len ? c->len : 1);
    memcpy(c->bytes, t->q[i].bytes, c->len);
    c->done = 1; /* one transmission, one op_done */
}

void tn_done_all(testnet *t)
{
    for (int i = 0; i < t->nq; i++) {
        if (!t->q[i].done && !t->q[i].rdma) {
            quay_on_op_done(t->e[t->q[i].from], t->q[i].token, 0);
            t->q[i].done = 1;
        }
    }
}

int tn_pump(testnet *t)
{
    int steps = 0;
    for (;;) {
        int moved = tn_pull_all(t);
        if (t->nq == 0 && moved == 0)
            return steps;
        /* One round over what is in flight; stop when a round moved
         * nothing (only refused packets are left). */
        int n = t->nq, progress = moved;
        for (int k = 0; k < n && t->nq > 0; k++) {
            progress |= tn_deliver(t, 0) != QUAY_EAGAIN;
            steps++;
        }
        if (!progress)
            return steps;
    }
}

int tn_tick(testnet *t, uint64_t *now)
{
    uint64_t d = QUAY_TIME_NONE;
    for (int r = 0; r < t->n; r++) {
        uint64_t x = quay_next_deadline(t->e[r]);
        if (x < d)
            d = x;
    }
    if (d == QUAY_TIME_NONE)
        return 0;
    if (d > *now)
        *now = d;
    for (int r = 0; r < t->n; r++)
        quay_on_time(t->e[r], *now);
    return 1;
}

void tn_settle(testnet *t, uint64_t *now, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        tn_pump(t);
        if (!tn_tick(t, now))
            break;
    }
    tn_pump(t);
}

int tn_find(const testnet *t, int pkt)
{
    for (int i = 0; i < t->nq; i++)
        if (pkt == 0 || tn_type(t, i) == pkt)
            return i;
    return -1;
}

int tn_type(const testnet *t, int i)
{
    if (t->q[i].rdma)
        return TN_RDMA;
    return t->q[i].len >= 2 ? t->q[i].bytes[1] : 0;
}

void tn_fill(uint8_t *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

int tn_done(const quay_req *r, quay_status *st) { return quay_req_test(r, st); }

int tn_good(const quay_req *r, uint64_t len)
{
    quay_status st;
    return tn_done(r, &st) && st.error == 0 && !st.cancelled && st.count == len;
}

uint32_t tn_rnd(uint64_t *state, uint32_t n)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return (uint32_t)((x >> 16) % n);
}

void tn_lossy_step(testnet *t, uint64_t *rng, int loss_pct, uint32_t wide)
{
    tn_pull_all(t);
    if (t->nq == 0)
        return;
    uint32_t nq = (uint32_t)t->nq;
    int i = wide != 0 && tn_rnd(rng, wide) == 0 ? (int)tn_rnd(rng, nq)
                                                 : (int)tn_rnd(rng, nq < 4 ? nq : 4);
    uint32_t x = tn_rnd(rng, 100);
    if ((int)x < loss_pct)
        tn_drop(t, i);
    else if ((int)x < 2 * loss_pct && t->nq < TN_MAX_PKTS - 1)
        tn_dup(t, i);
    else
        tn_deliver(t, i);
}

void tn_check_clean(const testnet *t)
{
    for (int r = 0; r < t->n; r++) {
        quay_stats st;
        quay_engine_stats(t->e[r], &st);
        ok_msg(st.reqs_in_use == 0 && st.umsgs_in_use == 0 && st.outs_in_use == 0 &&
                   st.bytes_unexpected == 0 && st.held_out_of_order == 0 &&
                   st.ctrl_queued == 0,
               "rank %d clean: reqs %u umsgs %u outs %u bytes %llu held %u ctrl %u", r,
               st.reqs_in_use, st.umsgs_in_use, st.outs_in_use,
               (unsigned long long)st.bytes_unexpected, st.held_out_of_order, st.ctrl_queued);
    }
}

uint32_t tn_outs_in_use(quay_engine *e)
{
    quay_stats st;
    quay_engine_stats(e, &st);
    return st.outs_in_use;
}
