/*
 * fe_calls.c — fuzz_engine's API calls: point-to-point, probes, cancel,
 * free, time, context switches (save / reset / restore with the
 * harness's own view rolled back alike), communicators, registered
 * memory, one-sided and atomic operations, collectives and NIC offload,
 * buffered-send buffers, peer failure (fuzz_engine.h).
 */
#include "fe.h"

const int fe_rc_post[] = {QUAY_EINVAL, QUAY_ERANK, QUAY_ETAG, QUAY_EAGAIN,
                          QUAY_ENOBUFS, QUAY_ECOMM, -1};
const int fe_rc_start[] = {QUAY_EAGAIN, QUAY_ENOBUFS, QUAY_ESTATE, -1};
const int fe_rc_inline[] = {QUAY_EINVAL, QUAY_ERANK, QUAY_ETAG, QUAY_EBUSY, QUAY_EPEER, -1};
const int fe_rc_misc[] = {QUAY_EINVAL, QUAY_ERANK, QUAY_EAGAIN, QUAY_ESTATE,
                          QUAY_EBUSY, QUAY_ENOTSUP, QUAY_ECOMM, QUAY_EPROTO, -1};

/* A post (or a persistent request's init) answered rc: the request is
 * tracked, and a persistent one started. */
static void fe_posted(fe *f, fe_req *s, const char *call, int rc, quay_req *r, int kind,
                      uint8_t *buf, size_t cap, int persist)
{
    fe_check_rc(f, call, rc, fe_rc_post);
    if (rc != 0)
        return;
    fe_req_track(f, s, r, kind, buf, cap);
    if (persist) {
        s->persist = 1;
        fe_start(f, s);
    }
}

void fe_op_isend(fe *f, fz_in *in)
{
    uint8_t d = fz_u8(in), t = fz_u8(in), sz = fz_u8(in), m = fz_u8(in);
    fe_comm *c = fe_comm_pick(f, (uint8_t)(m >> 2));
    fe_req *s = fe_req_slot(f);
    int32_t dst = (int32_t)(d % (c->size + 1));
    int32_t tag = (t & 0x80) ? 1000 + (t & 0x7f) : t % 8;
    size_t len = fe_size_class(f, sz);
    uint8_t *buf;
    quay_req *r = NULL;
    if (s == NULL || (buf = fe_keep_alloc(f, len, 0)) == NULL)
        return;
    fe_pattern(buf, len, (uint32_t)f->serial);
    if (dst == c->size)
        dst = QUAY_PROC_NULL;
    if ((m & 0x10) && (m & 3) == QUAY_SEND_STANDARD) {
        /* By copy, no request; QUAY_EBUSY: quay_isend takes it below. */
        int rc = quay_send_inline(f->e, c->c, buf, len, dst, tag);
        fe_check_rc(f, "quay_send_inline", rc, fe_rc_inline);
        if (rc != QUAY_EBUSY)
            return;
    }
    int persist = (m & 0x20) != 0; /* made, then started */
    int rc = persist ? quay_send_init(f->e, c->c, buf, len, dst, tag, (quay_send_mode)(m & 3), &r)
                     : quay_isend(f->e, c->c, buf, len, dst, tag, (quay_send_mode)(m & 3), &r);
    fe_posted(f, s, persist ? "quay_send_init" : "quay_isend", rc, r, FR_SEND, NULL, len,
              persist);
}

/* Start persistent request s (again); its round's COMPLETE count anew. */
void fe_start(fe *f, fe_req *s)
{
    int rc = quay_start(f->e, s->r);
    fe_check_rc(f, "quay_start", rc, fe_rc_start);
    if (rc == 0)
        s->completes = 0;
}

/* Start s and every other persistent request found complete (inactive),
 * s first, slots in order, by one quay_startall: those before the one it
 * refuses (if any) are started, as *pstarted says. */
static void fe_start_all(fe *f, fe_req *s)
{
    quay_req *q[FE_MAX_REQS];
    fe_req *of[FE_MAX_REQS];
    size_t n = 0, k = FE_MAX_REQS + 1;
    q[n] = s->r;
    of[n++] = s;
    for (int i = 0; i < FE_MAX_REQS; i++) {
        fe_req *o = &f->reqs[i];
        quay_status st;
        if (o == s || o->r == NULL || !o->persist || quay_req_test(o->r, &st) != 1)
            continue;
        fe_check_status(o, &st);
        q[n] = o->r;
        of[n++] = o;
    }
    int rc = quay_startall(f->e, n, q, &k);
    fe_check_rc(f, "quay_startall", rc, fe_rc_start);
    if (k > n || (rc == 0) != (k == n))
        fz_fail("quay_startall: %zu of %zu started, rc %d", k, n, rc);
    for (size_t j = 0; j < k; j++)
        of[j]->completes = 0;
}

void fe_op_irecv(fe *f, fz_in *in)
{
    uint8_t sb = fz_u8(in), t = fz_u8(in), sz = fz_u8(in), cb = fz_u8(in);
    fe_comm *c = fe_comm_pick(f, cb);
    fe_req *s = fe_req_slot(f);
    int32_t src = (int32_t)(sb % (c->size + 2));
    int32_t tag = t % 9 == 8 ? QUAY_ANY_TAG : t % 9;
    size_t cap = fe_size_class(f, sz);
    uint8_t *buf;
    quay_req *r = NULL;
    if (s == NULL || (buf = fe_keep_alloc(f, cap, 1)) == NULL)
        return;
    if (src == c->size)
        src = QUAY_ANY_SOURCE;
    else if (src == c->size + 1)
        src = QUAY_PROC_NULL;
    if (cb & 0x40) {
        /* Taken at the call if its message is here; QUAY_EBUSY: posted
         * below. The status is checked as a request's would be. */
        quay_status st;
        int rc = quay_recv_inline(f->e, c->c, buf, cap, src, tag, &st);
        fe_check_rc(f, "quay_recv_inline", rc, fe_rc_inline);
        if (rc == 0) {
            fe_req probe = {.kind = FR_RECV, .cap = cap};
            fe_check_status(&probe, &st);
            if (st.cancelled || (st.error != 0 && st.error != QUAY_ETRUNCATE &&
                                 st.error != QUAY_ENOTPOSTED))
                fz_fail("quay_recv_inline: status error %d, cancelled %d", st.error,
                        st.cancelled);
        }
        if (rc != QUAY_EBUSY)
            return;
    }
    int persist = (cb & 0x04) != 0; /* made, then started */
    int rc = persist ? quay_recv_init(f->e, c->c, buf, cap, src, tag, &r)
                     : quay_irecv(f->e, c->c, buf, cap, src, tag, &r);
    fe_posted(f, s, persist ? "quay_recv_init" : "quay_irecv", rc, r, FR_RECV, buf, cap,
              persist);
}

void fe_op_iprobe(fe *f, fz_in *in)
{
    uint8_t sb = fz_u8(in), t = fz_u8(in), cb = fz_u8(in);
    fe_comm *c = fe_comm_pick(f, cb);
    int32_t src = (int32_t)(sb % (c->size + 2));
    int32_t tag = t % 9 == 8 ? QUAY_ANY_TAG : t % 9;
    quay_status st;
    int rc;
    if (src == c->size)
        src = QUAY_ANY_SOURCE;
    else if (src == c->size + 1)
        src = QUAY_PROC_NULL;
    if (cb & 0x80) {
        quay_msg *m = NULL;
        int slot = -1;
        for (int i = 0; i < FE_MAX_MSGS && slot < 0; i++)
            if (f->msgs[i] == NULL)
                slot = i;
        if (slot < 0)
            return;
        rc = quay_improbe(f->e, c->c, src, tag, &m, &st);
        fe_check_rc(f, "quay_improbe", rc, fe_rc_post);
        if (rc == 0 && m != NULL)
            f->msgs[slot] = m;
    } else {
        int flag = 0;
        rc = quay_iprobe(f->e, c->c, src, tag, &flag, &st);
        fe_check_rc(f, "quay_iprobe", rc, fe_rc_post);
        if (rc == 0 && flag && src != QUAY_PROC_NULL && st.tag < 0)
            fz_fail("iprobe found a message with tag %d", st.tag);
    }
}

void fe_op_imrecv(fe *f, fz_in *in)
{
    uint8_t k = fz_u8(in), sz = fz_u8(in);
    int live[FE_MAX_MSGS], n = 0;
    for (int i = 0; i < FE_MAX_MSGS; i++)
        if (f->msgs[i] != NULL)
            live[n++] = i;
    fe_req *s = fe_req_slot(f);
    if (n == 0 || s == NULL)
        return;
    int i = live[k % n];
    size_t cap = fe_size_class(f, sz);
    uint8_t *buf = fe_keep_alloc(f, cap, 1);
    quay_req *r = NULL;
    if (buf == NULL)
        return;
    int rc = quay_imrecv(f->e, f->msgs[i], buf, cap, &r);
    fe_check_rc(f, "quay_imrecv", rc, fe_rc_post);
    if (rc == 0) {
        f->msgs[i] = NULL;
        fe_req_track(f, s, r, FR_RECV, buf, cap);
    }
}

void fe_op_req(fe *f, fz_in *in, int what)
{
    fe_req *s = fe_req_pick(f, in);
    quay_status st;
    int rc;
    if (s == NULL)
        return;
    switch (what) {
    case FE_CANCEL:
        rc = quay_cancel(f->e, s->r);
        fe_check_rc(f, "quay_cancel", rc, fe_rc_misc);
        break;
    case FE_FREE:
        rc = quay_req_free(f->e, s->r);
        fe_check_rc(f, "quay_req_free", rc, (const int[]){-1});
        s->r = NULL; /* released now or at its completion: never touched again */
        break;
    default:
        if (quay_req_test(s->r, &st) == 1) {
            fe_check_status(s, &st);
            if (s->persist && ((s - f->reqs) & 1))
                fe_start_all(f, s); /* the next round, with the others' */
            else if (s->persist)
                fe_start(f, s); /* the next round */
        }
        break;
    }
}

void fe_op_opdone(fe *f, fz_in *in)
{
    uint8_t k = fz_u8(in), how = fz_u8(in);
    switch (how % 4) {
    case 2: { /* a token never issued, or one already finished */
        int nd = f->ndone_tok < 8 ? f->ndone_tok : 8;
        fe_opdone(f, (k & 1) && nd ? f->done_tok[k % nd] : 0xF00D0000u + k, 0);
        return;
    }
    case 3:
        while (f->npend > 0 && !f->dead)
            fe_opdone(f, f->pend[--f->npend], 0);
        return;
    default:
        if (f->npend == 0)
            return;
        {
            int i = k % f->npend;
            uint64_t tok = f->pend[i];
            f->pend[i] = f->pend[--f->npend];
            fe_opdone(f, tok, how % 4 == 1 ? QUAY_EPEER : 0);
        }
    }
}

void fe_op_time(fe *f, fz_in *in)
{
    uint8_t d = fz_u8(in);
    f->now += (uint64_t)1 << (d % 40);
    int rc = quay_on_time(f->e, f->now);
    fe_check_rc(f, "quay_on_time", rc, (const int[]){-1});
}

/* Forget what a restored or reset channel 0 no longer has. */
static void forget_program(fe *f)
{
    memset(f->reqs, 0, sizeof f->reqs);
    memset(f->msgs, 0, sizeof f->msgs);
    for (int i = 0; i < FE_MAX_COMMS; i++)
        f->comms[i].c = NULL;
    fe_trace_clear(&f->tr[0]);
}

static int save_blob(fe *f, quay_engine *ch, uint8_t **pb, size_t *plen)
{
    size_t need = 0;
    int rc = quay_engine_save(ch, NULL, 0, &need);
    static const int ok[] = {QUAY_ENOBUFS, QUAY_ESTATE, QUAY_EBUSY, -1};
    fe_check_rc(f, "quay_engine_save", rc, ok);
    if (rc != QUAY_ENOBUFS)
        return rc;
    uint8_t *b = malloc(need ? need : 1);
    if (b == NULL)
        fz_fail("out of memory");
    rc = quay_engine_save(ch, b, need, plen);
    fe_check_rc(f, "quay_engine_save", rc, (const int[]){-1});
    if (rc != 0) { /* an allocation made to fail */
        free(b);
        return rc;
    }
    if (*plen != need)
        fz_fail("quay_engine_save wrote %zu bytes, announced %zu", *plen, need);
    *pb = b;
    return 0;
}

static void take_snapshot(fe *f, int c, uint8_t *blob, size_t len)
{
    free(f->snap.blob);
    f->snap.blob = blob;
    f->snap.len = len;
    f->snap.key = f->key[c];
    f->snap.ch = c;
    memcpy(f->snap.reqs, f->reqs, sizeof f->reqs);
    memcpy(f->snap.msgs, f->msgs, sizeof f->msgs);
    memcpy(f->snap.comms, f->comms, sizeof f->comms);
    for (int p = 0; p < f->n; p++) {
        f->snap.tx_seq[p] = f->peers[p].tx_seq;
        f->snap.chan_next[p] = f->peers[p].chan_next;
        f->snap.eng_ack[p] = f->peers[p].eng_ack;
        f->snap.rx_hi[p] = f->peers[p].rx_hi;
    }
    f->have_snap = 1;
}

static void peers_reset(fe *f)
{
    for (int p = 0; p < f->n; p++) {
        fe_peer *pe = &f->peers[p];
        pe->tx_seq = pe->chan_next = pe->eng_ack = pe->rx_hi = 0;
        for (int k = 0; k < FE_RETX; k++) {
            free(pe->retx[k]);
            pe->retx[k] = NULL;
        }
    }
}

/* Restore the snapshot's blob into its channel; 1 if taken. With
 * `strict` (nothing happened since the save) the channel must then save
 * to the very same bytes; else the restored context keeps a clock and
 * counters that only grow (engine time, allocation count), so it must
 * be a fixed point: what it saves restores and saves the same. */
static int restore_snapshot(fe *f, int strict)
{
    quay_engine *ch = f->ch[f->snap.ch];
    int rc = quay_engine_restore(ch, f->snap.blob, f->snap.len);
    static const int ok[] = {QUAY_EBUSY, QUAY_ESTATE, -1};
    fe_check_rc(f, "quay_engine_restore (own blob)", rc, ok);
    if (rc != 0)
        return 0;
    f->key[f->snap.ch] = f->snap.key;
    if (f->snap.ch == 0) {
        memcpy(f->reqs, f->snap.reqs, sizeof f->reqs);
        memcpy(f->msgs, f->snap.msgs, sizeof f->msgs);
        memcpy(f->comms, f->snap.comms, sizeof f->comms);
        for (int p = 0; p < f->n; p++) {
            fe_peer *pe = &f->peers[p];
            pe->tx_seq = f->snap.tx_seq[p];
            pe->chan_next = f->snap.chan_next[p];
            pe->eng_ack = f->snap.eng_ack[p];
            pe->rx_hi = f->snap.rx_hi[p];
        }
        f->npend = 0;
    }
    fe_trace_clear(&f->tr[f->snap.ch]);
    {
        uint8_t *b = NULL, *b2 = NULL;
        const uint8_t *want = f->snap.blob;
        size_t len = 0, len2 = 0, wlen = f->snap.len;
        if (save_blob(f, ch, &b, &len) != 0)
            return 1;
        if (!strict) {
            rc = quay_engine_restore(ch, b, len);
            if (rc != 0 || save_blob(f, ch, &b2, &len2) != 0) {
                if (rc != 0)
                    fe_check_rc(f, "quay_engine_restore (just saved)", rc, (const int[]){-1});
                if (!f->dead)
                    fz_fail("a context just saved does not restore and save again");
                free(b);
                return 1;
            }
            want = b;
            wlen = len;
        }
        const uint8_t *got = strict ? b : b2;
        size_t glen = strict ? len : len2, at = 0;
        while (at < glen && at < wlen && got[at] == want[at])
            at++;
        if (glen != wlen || at != glen)
            fz_fail("a restored context saves differently (%zu vs %zu bytes, first "
                    "difference at byte %zu)",
                    glen, wlen, at);
        f->blob_fixed++;
        free(b);
        free(b2);
    }
    return 1;
}

void fe_op_ctx(fe *f, fz_in *in)
{
    uint8_t what = fz_u8(in), cb = fz_u8(in);
    int c = cb % f->nch;
    quay_engine *ch = f->ch[c];
    int rc;
    if (fe_verbose)
        fprintf(stderr, "ctx: %d on channel %d (stable %d)\n", what % 7, c,
                quay_channel_is_stable(ch));
    static const int ok[] = {QUAY_ESTATE, QUAY_EBUSY, -1};
    switch (what % 7) {
    case 0:
        rc = quay_channel_quiesce(ch);
        fe_check_rc(f, "quay_channel_quiesce", rc, ok);
        break;
    case 1:
        rc = quay_channel_resume(ch);
        fe_check_rc(f, "quay_channel_resume", rc, ok);
        break;
    case 2:
        rc = quay_channel_is_stable(ch);
        if (rc != 0 && rc != 1 && rc != QUAY_ESTATE)
            fz_fail("quay_channel_is_stable returned %d", rc);
        break;
    case 3: {
        uint8_t *b = NULL;
        size_t len = 0;
        if (save_blob(f, ch, &b, &len) == 0)
            take_snapshot(f, c, b, len);
        break;
    }
    case 4:
        if (f->have_snap)
            restore_snapshot(f, 0);
        break;
    case 5:
        rc = quay_channel_reset(ch, 0x4b00u + cb);
        fe_check_rc(f, "quay_channel_reset", rc, ok);
        if (rc == 0) {
            f->key[c] = 0x4b00u + cb;
            if (c == 0) {
                forget_program(f);
                peers_reset(f);
                f->npend = 0;
            }
            fe_trace_clear(&f->tr[c]);
        }
        break;
    default: { /* the ordering runner's switch: save, reset, restore */
        uint8_t *b = NULL;
        size_t len = 0;
        if (save_blob(f, ch, &b, &len) != 0)
            break;
        take_snapshot(f, c, b, len);
        rc = quay_channel_reset(ch, 0x5eedu + cb);
        if (rc != 0)
            fz_fail("reset of a channel that just saved: %s", quay_strerror(rc));
        f->key[c] = 0x5eedu + cb;
        if (!restore_snapshot(f, 1) && !f->dead)
            fz_fail("a blob saved a moment ago is refused");
        break;
    }
    }
}

void fe_op_comm(fe *f, fz_in *in)
{
    uint8_t what = fz_u8(in), ctx = fz_u8(in), mem = fz_u8(in);
    int rc;
    if (what & 1) {
        fe_comm *c = &f->comms[ctx % FE_MAX_COMMS];
        if (c->c == NULL)
            return;
        rc = quay_comm_free(f->e, c->c);
        fe_check_rc(f, "quay_comm_free", rc, (const int[]){QUAY_EBUSY, -1});
        if (rc == 0)
            c->c = NULL;
        return;
    }
    fe_comm *c = NULL;
    if (f->comms[0].c == NULL) { /* after a reset: the world again */
        c = &f->comms[0];
        mem = 0xff;
        what &= 1;
        ctx = 0;
    }
    for (int i = 1; i < FE_MAX_COMMS && c == NULL; i++)
        if (f->comms[i].c == NULL)
            c = &f->comms[i];
    if (c == NULL)
        return;
    unsigned m = mem | (1u << f->me);
    c->size = 0;
    for (int w = 0; w < f->n; w++)
        if (m >> w & 1u)
            c->world[c->size++] = w;
    if (what & 2) { /* reversed rank order */
        for (int i = 0; i < c->size / 2; i++) {
            int32_t t = c->world[i];
            c->world[i] = c->world[c->size - 1 - i];
            c->world[c->size - 1 - i] = t;
        }
    }
    c->ctx = (what & 4) ? (uint32_t)ctx | QUAY_CTX_COLL : ctx; /* twins are refused */
    rc = quay_comm_create(f->e, c->ctx, c->size, c->world, &c->c);
    fe_check_rc(f, "quay_comm_create", rc, fe_rc_misc);
    if (rc != 0) {
        c->c = NULL;
        return;
    }
    if (quay_comm_size(c->c) != c->size || quay_comm_context(c->c) != c->ctx ||
        quay_comm_world_rank(c->c, quay_comm_rank(c->c)) != f->me ||
        quay_comm_world_rank(c->c, -1) != -1 || quay_comm_world_rank(c->c, c->size) != -1)
        fz_fail("communicator %u: size, context or rank map wrong", c->ctx);
    for (int32_t i = 0; i < c->size; i++)
        if (quay_comm_world_rank(c->c, i) != c->world[i])
            fz_fail("communicator %u: world rank of %d", c->ctx, i);
}

void fe_op_mem(fe *f, fz_in *in)
{
    uint8_t what = fz_u8(in), a = fz_u8(in), b2 = fz_u8(in), c = fz_u8(in);
    int rc;
    switch (what % 4) {
    case 0: { /* register one of the harness's buffers */
        uint64_t key = 0;
        uint8_t *buf = f->regbuf[a % 4];
        rc = quay_mem_register(f->e, buf + (a >> 2) % 16, 256 - (a >> 2) % 16 - (b2 >> 2) % 64,
                               b2 & 3u, &key);
        fe_check_rc(f, "quay_mem_register", rc, fe_rc_misc);
        if (rc == 0)
            fe_add_key(f, key);
        break;
    }
    case 1: {
        uint64_t key = f->nkeys ? f->keys[a % f->nkeys] : a;
        rc = quay_mem_deregister(f->e, (b2 & 1) ? key ^ ((uint64_t)1 << (b2 >> 2) % 64) : key);
        fe_check_rc(f, "quay_mem_deregister", rc, fe_rc_misc);
        break;
    }
    case 2: {
        uint64_t key = f->nkeys ? f->keys[a % f->nkeys] : a;
        uint32_t access = (what >> 2) & 3u ? (what >> 2) & 3u : QUAY_MEM_READ;
        fe_through_key(f, fe_peer_of(f, c), key, (uint64_t)b2 * ((what & 0x80) ? 64u : 1u), c,
                       access);
        break;
    }
    default: {
        uint64_t key = f->nkeys ? f->keys[a % f->nkeys] : a, old = 0;
        rc = quay_mem_atomic(f->e, fe_peer_of(f, c), key, (uint64_t)b2 % 64 * 4u, 1u + c % 4u, 5,
                             0, &old);
        static const int ok[] = {QUAY_ESTATE, QUAY_EPROTO, QUAY_EINVAL, -1};
        fe_check_rc(f, "quay_mem_atomic", rc, ok);
        break;
    }
    }
}

void fe_op_rma(fe *f, fz_in *in)
{
    uint8_t kind = fz_u8(in);
    int32_t p = fe_peer_of(f, fz_u8(in));
    uint64_t key = fe_pick64(f, in);
    uint8_t off = fz_u8(in), ln = fz_u8(in);
    fe_req *s = fe_req_slot(f);
    quay_req *r = NULL;
    int rc;
    if (s == NULL)
        return;
    uint8_t *buf = fe_keep_alloc(f, kind % 5 >= 2 ? 8 : ln, 0);
    if (buf == NULL)
        return;
    switch (kind % 5) {
    case 0: rc = quay_iput(f->e, p, buf, ln, key, off, &r); break;
    case 1: rc = quay_iget(f->e, p, buf, ln, key, off, &r); break;
    default:
        rc = quay_iatomic(f->e, p, (uint32_t)(kind % 5 - 1), key, off, 3, 1, (uint64_t *)buf, &r);
        break;
    }
    fe_check_rc(f, "quay_iput/iget/iatomic", rc, fe_rc_misc);
    if (rc == 0)
        fe_req_track(f, s, r, FR_RMA, NULL, 0);
}

void fe_op_coll(fe *f, fz_in *in)
{
    uint8_t kind = fz_u8(in), root = fz_u8(in), cnt = fz_u8(in), dtop = fz_u8(in),
            cb = fz_u8(in);
    fe_comm *c = fe_comm_pick(f, cb);
    fe_req *s = fe_req_slot(f);
    quay_req *r = NULL;
    quay_op op;
    quay_dtype dt = (quay_dtype)(1 + (dtop & 15) % (QUAY_DTYPE_COUNT_ - 1));
    size_t count = cnt % 64, esz = quay_dtype_size(dt);
    int rc;
    if (s == NULL)
        return;
    memset(&op, 0, sizeof op);
    op.kind = (quay_op_kind)(1 + (dtop >> 4) % (QUAY_OP_USER - 1));
    if (kind % 6 == 4) { /* the NIC agent's answer to an OFFLOAD (host) */
        int nc = f->ncookies < 8 ? f->ncookies : 8;
        uint64_t cookie = nc && !(root & 0x80) ? f->cookies[root % nc] : root;
        rc = quay_on_offload_done(f->e, cookie, (cb & 1) ? QUAY_EPEER : 0);
        fe_check_rc(f, "quay_on_offload_done", rc, (const int[]){QUAY_ESTATE, -1});
        return;
    }
    uint8_t *sbuf = fe_keep_alloc(f, count * esz, 0), *rbuf = fe_keep_alloc(f, count * esz, 1);
    if (sbuf == NULL || rbuf == NULL)
        return;
    memset(sbuf, 1, count * esz);
    if (kind % 6 == 5) { /* this engine as a NIC agent */
        quay_offload d;
        memset(&d, 0, sizeof d);
        d.kind = (quay_offload_kind)(1 + (kind >> 3) % 4);
        d.ctx = 0x100u + (cb & 3);
        d.size = f->n;
        for (int w = 0; w < f->n; w++)
            f->agent_world[w] = w;
        d.world = f->agent_world;
        d.root = (int32_t)(root % f->n);
        d.sbuf = (cb & 0x80) ? QUAY_IN_PLACE : sbuf;
        d.rbuf = rbuf;
        d.count = d.kind == QUAY_OFF_BCAST ? count * esz : count;
        d.dt = dt;
        d.op = op;
        d.alg = (kind >> 5) & 3;
        d.cookie = 0xC00C1E00u + (uint64_t)f->nagent;
        rc = quay_agent_post(f->e, &d);
        if (fe_verbose)
            fprintf(stderr, "  agent_post kind %d root %d count %zu dt %d op %d sbuf %p: %d\n",
                    d.kind, d.root, d.count, d.dt, d.op.kind, d.sbuf, rc);
        fe_check_rc(f, "quay_agent_post", rc, fe_rc_misc);
        if (rc == 0)
            f->agent_cookies[f->nagent++ % 8] = d.cookie;
        return;
    }
    switch (kind % 4) {
    case 0: rc = quay_ibarrier(f->e, c->c, &r); break;
    case 1: rc = quay_ibcast(f->e, c->c, rbuf, count * esz, (int32_t)(root % (c->size + 1)), &r);
        break;
    case 2:
        rc = quay_ireduce(f->e, c->c, (cb & 0x80) ? QUAY_IN_PLACE : sbuf, rbuf, count, dt, &op,
                          (int32_t)(root % (c->size + 1)), &r);
        break;
    default:
        rc = quay_iallreduce(f->e, c->c, (cb & 0x80) ? QUAY_IN_PLACE : sbuf, rbuf, count, dt,
                             &op, &r);
        break;
    }
    fe_check_rc(f, "collective call", rc, fe_rc_misc);
    if (rc == 0)
        fe_req_track(f, s, r, FR_COLL, rbuf, count * esz);
}

void fe_op_buf(fe *f, fz_in *in)
{
    uint8_t what = fz_u8(in), sz = fz_u8(in);
    int rc;
    if (what & 1) {
        void *b = NULL;
        size_t l = 0;
        rc = quay_buffer_detach(f->e, &b, &l);
        fe_check_rc(f, "quay_buffer_detach", rc, fe_rc_misc);
        if (rc == 0)
            f->attached = 0;
        return;
    }
    size_t len = fe_size_class(f, sz) + QUAY_BSEND_OVERHEAD * (1u + sz % 4);
    uint8_t *b = fe_keep_alloc(f, len, 0);
    if (b == NULL)
        return;
    rc = quay_buffer_attach(f->e, b, len);
    fe_check_rc(f, "quay_buffer_attach", rc, fe_rc_misc);
    if (rc == 0)
        f->attached = 1;
}

void fe_op_peerfail(fe *f, fz_in *in)
{
    int32_t p = (int32_t)(fz_u8(in) % (f->n + 1));
    int rc = quay_on_peer_failed(f->e, p);
    static const int ok[] = {QUAY_ERANK, QUAY_EINVAL, -1};
    fe_check_rc(f, "quay_on_peer_failed", rc, ok);
    if (rc == QUAY_ERANK && p != f->me && p < f->n)
        fz_fail("quay_on_peer_failed(%d) refused a valid peer", p);
}