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
#include "collectives/coll.h"

#include "collectives/ops.h"
#include "collectives/tree.h"

void coll_build_reduce(coll_sched *s, size_t count, int32_t root, int in_place)
{
    int32_t n = s->size, r = s->rank, kids[32];
    size_t len = count * s->esize;
    int mine_in_rbuf = in_place && r == root;
    if (n == 1 || count == 0) {
        if (r == root && !in_place && count != 0)
            cs_copy(s, CB_RECV, 0, CB_SEND, 0, len);
        return;
    }
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
