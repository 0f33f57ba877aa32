/*
 * reduce.c — reduce to a root over a binomial tree.
 *
 * Rank v of the tree receives the partial results of its children v + 1,
 * v + 2, v + 4, ... (each into its own temporary slot, all posted at
 * once) and folds them in that order: after child v + 2^k the result
 * covers ranks [v, v + 2^(k+1)), so the operands stay in rank order. The
 * running result moves into the child's slot (slot = mine op slot) rather
 * than being copied. A commutative op uses the tree rooted at the root
 * (relative ranks); a non-commutative one the tree rooted at rank 0 in
 * natural order, whose result rank 0 then sends to the root.
 */
#include "collectives/algs.h"

#include "collectives/ops.h"
#include "collectives/tree.h"

void coll_reduce_binomial(coll_sched *s, const coll_args *a)
{
    int32_t n = s->size, r = s->rank, root = a->root, kids[32];
    size_t count = a->count, len = count * s->esize;
    int mine_in_rbuf = a->in_place && r == root;
    int32_t troot = op_commutative(&s->op) ? root : 0;
    int32_t v = (r - troot + n) % n;
    int nk = tree_binomial_children(v, n, kids, 32);
    sched_tmp(s, (size_t)nk * len);
    int acc_buf = mine_in_rbuf ? CB_RECV : CB_SEND;
    size_t acc_off = 0;
    uint32_t last = CS_NONE;
    for (int i = 0; i < nk; i++) {
        int32_t child = kids[nk - 1 - i]; /* smallest subtree (next ranks) first */
        size_t slot = (size_t)i * len;
        uint32_t rcv = cs_recv(s, (child + troot) % n, CB_TMP, slot, len, 0);
        uint32_t red = cs_reduce(s, acc_buf, acc_off, CB_TMP, slot, count);
        cs_dep(s, rcv, red);
        cs_dep(s, last, red);
        acc_buf = CB_TMP;
        acc_off = slot;
        last = red;
    }
    uint32_t sent = CS_NONE;
    if (v != 0) {
        int32_t parent = tree_binomial_parent(v, n);
        sent = cs_send(s, (parent + troot) % n, acc_buf, acc_off, len, 0);
        cs_dep(s, last, sent);
    } else if (troot == root) {
        if (acc_buf != CB_RECV)
            cs_dep(s, last, cs_copy(s, CB_RECV, 0, acc_buf, acc_off, len));
    } else {
        cs_dep(s, last, cs_send(s, root, acc_buf, acc_off, len, 1));
    }
    if (r == root && troot != root) {
        /* The result comes from rank 0; an in-place operand must have
         * left first. */
        cs_dep(s, sent, cs_recv(s, troot, CB_RECV, 0, len, 1));
    }
}

/* ---- application bypass ---------------------------------------------------------- */

uint32_t coll_reduce_bypass_subtag(quay_op_kind op, quay_dtype dt)
{
    return CS_BYPASS_REDUCE | (uint32_t)op << 4 | (uint32_t)dt;
}

/* Application-bypass reduce [design.md §6; NIC ch. 6 did the broadcast]:
 * the binomial tree rooted at rank 0 in natural order, whatever the root,
 * so that a partial result that arrives before the call says by itself
 * (its sub-tag: op and type; its length: the count) everything a rank
 * needs to take in its other children's and combine them: their results
 * fold in rank order as they come (ops are associative), and the call only
 * puts its own operand in front (mine op children's) and sends it on. The
 * root, if not rank 0, receives the result from rank 0: one hop more than
 * the plain tree, the price of not knowing the root before the call.
 *
 * Where the own operand is (in place at the root or not) and where the
 * result goes are set by coll_reduce_bypass_claim on placeholders (byp_own
 * reads the send buffer, the final move is a join): at once when the call
 * builds the schedule; at the call, before it opens the gate, when an
 * arrival built it (early). */
void coll_build_reduce_bypass(coll_sched *s, size_t count, int32_t root, int in_place,
                              int early)
{
    int32_t n = s->size, v = s->rank, kids[32];
    size_t len = count * s->esize;
    uint32_t sub = coll_reduce_bypass_subtag(s->op.kind, s->dt);
    if (n == 1 || count == 0) {
        if (v == root && !in_place && count != 0)
            cs_copy(s, CB_RECV, 0, CB_SEND, 0, len);
        return;
    }
    int nk = tree_binomial_children(v, n, kids, 32);
    sched_tmp(s, (size_t)nk * len);
    uint32_t last = CS_NONE;
    for (int i = 0; i < nk; i++) {
        size_t slot = (size_t)i * len;
        uint32_t rcv = cs_recv(s, kids[nk - 1 - i], CB_TMP, slot, len, sub);
        if (i == 0) {
            last = rcv;
            continue;
        }
        uint32_t red = cs_reduce(s, CB_TMP, slot - len, CB_TMP, slot, count);
        cs_dep(s, rcv, red);
        cs_dep(s, last, red);
        last = red;
    }
    if (early)
        s->gate = cs_join(s);
    int own = in_place && v == root ? CB_RECV : CB_SEND;
    int acc = own;
    size_t acc_off = 0;
    uint32_t mine = s->gate;
    if (nk > 0) {
        acc = CB_TMP;
        acc_off = (size_t)(nk - 1) * len;
        mine = cs_reduce(s, own, 0, CB_TMP, acc_off, count);
        cs_dep(s, last, mine);
        cs_dep(s, s->gate, mine);
    }
    s->byp_own = nk > 0 ? mine : CS_NONE;
    /* The result's last move: a join that coll_reduce_bypass_claim turns
     * into what the root needs (now, or at the call if early). */
    uint32_t fin = cs_join(s);
    if (v != 0) {
        uint32_t sent = cs_send(s, tree_binomial_parent(v, n), acc, acc_off, len, sub);
        /* Wake the parent only for a rendezvous: its host must answer the
         * handshake for the data to move; an eager result waits anyway
         * and folding it early saves less than an interrupt costs. */
        if (sent != CS_NONE && len > s->e->cfg.eager_max)
            s->steps[sent].notify = 1;
        cs_dep(s, mine, sent);
        /* (at a root other than rank 0, the result comes after its own
         * operand left: in place, it is in the receive buffer) */
        cs_dep(s, sent, fin);
    } else {
        cs_dep(s, mine, fin);
    }
    s->byp_final = fin;
    s->bypass_len = len;
    if (!early)
        coll_reduce_bypass_claim(s, root, in_place);
}

void coll_reduce_bypass_claim(coll_sched *s, int32_t root, int in_place)
{
    size_t len = s->bypass_len;
    if (s->err != 0 || s->byp_final == CS_NONE)
        return; /* building failed: the schedule is discarded */
    if (s->byp_own != CS_NONE && in_place && s->rank == root)
        s->steps[s->byp_own].buf2 = CB_RECV;
    if (s->rank != 0 && s->rank != root)
        return; /* the placeholder stays a join */
    coll_step *f = &s->steps[s->byp_final];
    /* (rank 0 has children, so its result is in the last slot) */
    size_t acc_off = s->tmp_len - len;
    f->len = len;
    if (s->rank != 0) {
        f->kind = CS_RECV;
        f->peer = 0;
        f->buf = CB_RECV;
        f->off = 0;
        f->subtag = 1;
    } else if (root == 0) {
        f->kind = CS_COPY;
        f->buf = CB_RECV;
        f->off = 0;
        f->buf2 = CB_TMP;
        f->off2 = acc_off;
    } else {
        f->kind = CS_SEND;
        f->peer = root;
        f->buf = CB_TMP;
        f->off = acc_off;
        f->subtag = 1;
    }
}

/* ---- the call ------------------------------------------------------------------- */

static uint32_t reduce_configured(const quay_config *c) { return c->coll_reduce; }

static int reduce_check(const quay_engine *e, const quay_offload *d)
{
    if (op_check(&d->op, d->dt) != 0)
        return QUAY_EINVAL;
    if (d->root < 0 || d->root >= d->size)
        return QUAY_ERANK;
    return coll_reduce_post_check(d, d->world[d->root] == e->rank);
}

static void reduce_args(const quay_offload *d, coll_args *a)
{
    a->root = d->root;
    coll_reduce_fill_args(d, a);
}

static uint32_t reduce_choose(const coll_args *a)
{
    (void)a;
    return QUAY_REDUCE_BINOMIAL;
}

/* Only the root has a result. */
static void reduce_trivial(coll_sched *s, const coll_args *a)
{
    if (s->rank == a->root)
        coll_reduce_trivial(s, a);
}

const coll_op coll_op_reduce = {
    .kind = QUAY_OFF_REDUCE,
    .name = "reduce",
    .configured = reduce_configured,
    .check = reduce_check,
    .args = reduce_args,
    .bind = coll_reduce_bind,
    .choose = reduce_choose,
    .trivial = reduce_trivial,
    .counted = 1,
};

int quay_ireduce(quay_engine *e, quay_comm *c, const void *sbuf, void *rbuf, size_t count,
                 quay_dtype dt, const quay_op *op, int32_t root, quay_req **req)
{
    int rc = coll_call_args(e, c, req);
    if (rc != 0)
        return rc;
    if (root < 0 || root >= c->size)
        return QUAY_ERANK;
    rc = coll_reduce_args(e, c, sbuf, rbuf, count, dt, op, root == c->myrank, req);
    if (rc != 0)
        return rc;
    quay_offload d = {.root = root, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dt = dt,
                      .op = *op};
    return coll_call(e, c, &coll_op_reduce, &d, req);
}
