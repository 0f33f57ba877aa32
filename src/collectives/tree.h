/*
 * tree.h — communication trees and segment sizes for the collectives.
 *
 * Ranks here are RELATIVE: v in [0, n) with the root at v = 0 (a caller
 * maps v = (rank - root + n) % n and back). Pure functions: no engine
 * state, no allocation (tree_postal takes the caller's arrays).
 */
#ifndef QUAY_COLLECTIVES_TREE_H
#define QUAY_COLLECTIVES_TREE_H

#include <stddef.h>
#include <stdint.h>

/* ---- binomial tree ------------------------------------------------------ */

/** Parent of v: v with its lowest set bit cleared; -1 for the root (and
 *  for v outside [0, n)). */
int32_t tree_binomial_parent(int32_t v, int32_t n);

/** Children of v: v + 2^k for every 2^k below v's lowest set bit (every k
 *  for the root) with v + 2^k < n, in the order v sends to them: the
 *  largest k first, so the child whose (unclipped) subtree 2^k is largest
 *  and deepest starts forwarding first. Writes at most max of them to out
 *  and returns how many it wrote (0 for v outside [0, n)); 32 always
 *  suffices. */
int tree_binomial_children(int32_t v, int32_t n, int32_t *out, int max);

/** Ranks in v's subtree, v included: [v, v + lowbit(v)) clipped to n (n
 *  for the root, 0 for v outside [0, n)). Binomial scatter sends a child
 *  this many blocks. */
int32_t tree_binomial_subtree(int32_t v, int32_t n);

/* ---- postal model [Bar-Noy/Kipnis; NIC ch. 2] ------------------------------
 * A send keeps its sender busy one unit; the receiver holds the message
 * lambda units after the send started. Times and lambda are in thousandths
 * of a unit; lambda_milli below 1000 is taken as 1000 (the model needs
 * lambda >= 1). */

/** F_lambda(t): how many nodes can hold the message by time t (reception
 *  at exactly t counts): 1 for t < lambda, else F(t - 1) + F(t - lambda).
 *  Saturates at UINT64_MAX / 2. */
uint64_t tree_postal_reach(uint32_t lambda_milli, uint64_t t_milli);

/** The latency-optimal multicast tree on n nodes (root 0), built greedily:
 *  node p = 1, 2, ... is sent by the earliest free send slot (ties go to
 *  the slot of an older sender). Output: parent[n] (parent[0] = -1);
 *  children as CSR in send order: kids[first[v] .. first[v+1]-1], first
 *  has n + 1 entries, kids n - 1. scratch: at least 4 * n entries.
 *  Returns the finish time (latest reception) in milli-units, 0 for n = 1;
 *  does nothing and returns 0 for n < 1. */
uint64_t tree_postal(int32_t n, uint32_t lambda_milli, int32_t *parent, int32_t *first,
                     int32_t *kids, uint64_t *scratch);

/* ---- pipelined chain ------------------------------------------------------ */

/** Segment size for a pipelined chain broadcast of len bytes over n ranks:
 *  the s in [lo, len] that minimises the cost model T(s) = (n - 2 +
 *  ceil(len / s)) * (latency + s * beta), beta = ps_per_byte / 1000 ns
 *  per byte, where lo = max(min_seg, ceil(len / max_segs), 1) (max_segs 0:
 *  no limit). It lies near s* = sqrt(len * latency / ((n - 2) * beta)),
 *  the optimum without the ceiling; ties go to the larger s. n <= 2, beta
 *  0 or lo >= len: len. len 0: 0. */
size_t tree_chain_segment(size_t len, int32_t n, uint64_t latency_ns, uint64_t ps_per_byte,
                          size_t min_seg, uint32_t max_segs);

#endif /* QUAY_COLLECTIVES_TREE_H */
