/*
 * tree.c — communication trees and chain segment sizes; see tree.h.
 *
 * Sizes and times are computed in 64 bits where a 32-bit rank sum could
 * overflow (v + 2^30 for n near INT32_MAX).
 */
#include "collectives/tree.h"

/* ---- binomial tree ------------------------------------------------------ */

int32_t tree_binomial_parent(int32_t v, int32_t n)
{
    if (v <= 0 || v >= n)
        return -1;
    return v & (v - 1);
}

int tree_binomial_children(int32_t v, int32_t n, int32_t *out, int max)
{
    if (v < 0 || v >= n)
        return 0;
    /* The root may use every power of two below 2^31 > n. */
    int64_t low = v == 0 ? (int64_t)1 << 31 : (int64_t)(v & -v);
    int cnt = 0;
    for (int64_t m = low >> 1; m >= 1 && cnt < max; m >>= 1)
        if (v + m < n)
            out[cnt++] = (int32_t)(v + m);
    return cnt;
}

int32_t tree_binomial_subtree(int32_t v, int32_t n)
{
    if (v < 0 || v >= n)
        return 0;
    if (v == 0)
        return n;
    int64_t end = (int64_t)v + (v & -v);
    return (int32_t)((end < n ? end : n) - v);
}

/* ---- postal model ------------------------------------------------------- */

#define UNIT 1000u             /* one time unit in milli-units */
#define REACH_CAP (UINT64_MAX / 2)

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* C(s + b, b), or REACH_CAP if it is at least that. Built up as C(s + j, j)
 * = C(s + j - 1, j - 1) * (s + j) / j, exact at each step; dividing the
 * common factor of the running value and j out first means j / g divides
 * s + j, so nothing is multiplied before the overflow test. */
static uint64_t binom_sat(uint64_t s, uint64_t b)
{
    uint64_t c = 1;
    for (uint64_t j = 1; j <= b; j++) {
        uint64_t g = gcd64(c, j);
        uint64_t f = (s + j) / (j / g);
        c /= g;
        if (c > REACH_CAP / f)
            return REACH_CAP;
        c *= f;
        if (c >= REACH_CAP) /* the terms only grow with j */
            return REACH_CAP;
    }
    return c;
}

/*
 * Closed form instead of the recursion (whose arguments t - a - b*lambda
 * are too many to tabulate for fractional lambda, and whose answer is too
 * large to count node by node). In the greedy tree a node at depth b is
 * reached by a path whose j-th sender had made i_j >= 0 sends before, so
 * it receives at b * lambda + (i_1 + ... + i_b). The paths of depth b that
 * arrive by t number C(S_b + b, b), S_b = floor(t - b * lambda) in whole
 * units (stars and bars: b sends' waits adding up to at most S_b), hence
 *
 *     F(t) = sum over b = 0 .. floor(t / lambda) of C(S_b + b, b),
 *
 * which satisfies F(t) = F(t - 1) + F(t - lambda) (the root's subtree
 * without its first child, plus that child's subtree). Since S_b >= B - b
 * for B = floor(t / lambda), term b is at least C(B, b): when B >= 63 the
 * terms up to b = 63 already add up to 2^63 > REACH_CAP, so the loop runs
 * at most 64 times whatever t is.
 */
uint64_t tree_postal_reach(uint32_t lambda_milli, uint64_t t_milli)
{
    uint64_t lam = lambda_milli < UNIT ? UNIT : lambda_milli;
    uint64_t total = 0;
    for (uint64_t b = 0; b <= t_milli / lam; b++) {
        total += binom_sat((t_milli - b * lam) / UNIT, b);
        if (total >= REACH_CAP)
            return REACH_CAP;
    }
    return total;
}

/*
 * Greedy top-down construction [NIC ch. 2]. A send slot is (time, sender):
 * NEW holds each node's first slot, at its reception time; OLD the next
 * slot of a sender that just used one, one unit later. Every node takes
 * the earliest slot; since popped times never decrease and each push adds
 * a constant (lambda or 1) to the popped time, both queues stay sorted and
 * the earliest slot is one of the two heads: O(n). A tie goes to OLD, as in
 * the dissertation, whose example trees this reproduces. Each queue gets
 * at most n pushes, so plain arrays with a head index suffice.
 */
uint64_t tree_postal(int32_t n, uint32_t lambda_milli, int32_t *parent, int32_t *first,
                     int32_t *kids, uint64_t *scratch)
{
    if (n < 1)
        return 0;
    uint64_t lam = lambda_milli < UNIT ? UNIT : lambda_milli;
    uint64_t *newq = scratch, *oldq = scratch + 2 * (size_t)n; /* (time, node) pairs */
    size_t nh = 0, nt = 1, oh = 0, ot = 0;
    uint64_t finish = 0;

    newq[0] = 0; /* the root holds the message at time 0 */
    newq[1] = 0;
    parent[0] = -1;
    for (int32_t p = 1; p < n; p++) {
        uint64_t t, q;
        if (oh < ot && (nh == nt || oldq[2 * oh] <= newq[2 * nh])) {
            t = oldq[2 * oh];
            q = oldq[2 * oh + 1];
            oh++;
        } else {
            t = newq[2 * nh];
            q = newq[2 * nh + 1];
            nh++;
        }
        parent[p] = (int32_t)q;
        newq[2 * nt] = t + lam;
        newq[2 * nt + 1] = (uint64_t)p;
        nt++;
        oldq[2 * ot] = t + UNIT;
        oldq[2 * ot + 1] = q;
        ot++;
        if (t + lam > finish)
            finish = t + lam;
    }

    /* CSR without extra memory: count children into first[v], turn the
     * counts into block ends, then place p = n-1 .. 1 from the back of its
     * parent's block, which leaves first[v] at the block's start and the
     * children in increasing p, i.e. in send order. */
    for (int32_t v = 0; v < n; v++)
        first[v] = 0;
    for (int32_t p = 1; p < n; p++)
        first[parent[p]]++;
    int32_t end = 0;
    for (int32_t v = 0; v < n; v++) {
        end += first[v];
        first[v] = end;
    }
    first[n] = n - 1;
    for (int32_t p = n - 1; p >= 1; p--)
        kids[--first[parent[p]]] = p;
    return finish;
}

/* ---- pipelined chain ---------------------------------------------------- */

static size_t ceil_div(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

/* The cost model of tree_chain_segment and the best size seen so far. */
typedef struct chain_search {
    size_t len, lo;     /* allowed segment sizes: [lo, len] */
    double n2, lat, ps; /* n - 2; latency and beta in picoseconds */
    size_t best;
    double best_cost;
} chain_search;

/* T(s) in picoseconds, as a double: the products overflow 64 bits for
 * large messages and latencies, and only comparisons matter. */
static double chain_cost(const chain_search *cs, size_t s)
{
    size_t k = ceil_div(cs->len, s);
    return (cs->n2 + (double)k) * (cs->lat + (double)s * cs->ps);
}

/* T with len / s for ceil(len / s): a lower bound of T(s), convex in s. */
static double chain_bound(const chain_search *cs, size_t s)
{
    return (cs->n2 + (double)cs->len / (double)s) * (cs->lat + (double)s * cs->ps);
}

/* Evaluate s clamped to [lo, len]; keep it if cheaper than the best, or
 * as cheap and larger (fewer segments; and a deterministic choice). */
static void chain_try(chain_search *cs, size_t s)
{
    s = s < cs->lo ? cs->lo : s > cs->len ? cs->len : s;
    double c = chain_cost(cs, s);
    if (c < cs->best_cost || (c == cs->best_cost && s > cs->best)) {
        cs->best = s;
        cs->best_cost = c;
    }
}

/*
 * Relaxing k = ceil(len / s) to len / s gives the bound B(s) = (n - 2 +
 * len / s)(L + s beta) <= T(s), least at s* = sqrt(len L / ((n - 2)
 * beta)). Rounding s* alone can miss the best size by several percent (the
 * ceiling makes T ragged when segments are small or the lo clamp binds),
 * so the answer is the exact minimum of T over [lo, len]:
 *   1. s* by bisection on s^2 <= len L / ((n - 2) beta) (no libm here);
 *   2. a first guess: s*, s* + 1 and the equal-split sizes ceil(len / k)
 *      for the counts k around len / s* (for k segments ceil(len / k) is
 *      the smallest size, hence the cheapest);
 *   3. any better s has B(s) <= T(s) < best: an interval around s*
 *      (B is convex), found by bisection on each side; it is scanned by
 *      size, or by count (ceil(len / k)) when that takes fewer steps.
 * Ties go to the larger size. The interval is short unless T is flat
 * (few ranks and many segments), where it is at most about sqrt(len)
 * steps.
 */
size_t tree_chain_segment(size_t len, int32_t n, uint64_t latency_ns, uint64_t ps_per_byte,
                          size_t min_seg, uint32_t max_segs)
{
    if (len == 0)
        return 0;
    size_t lo = min_seg > 0 ? min_seg : 1;
    if (max_segs > 0 && ceil_div(len, max_segs) > lo)
        lo = ceil_div(len, max_segs);
    if (lo >= len || n <= 2 || ps_per_byte == 0)
        return len;

    chain_search cs = {len, lo, (double)n - 2.0, (double)latency_ns * 1000.0,
                       (double)ps_per_byte, len, 0};
    cs.best_cost = chain_cost(&cs, len);

    /* 1. s*: the largest s in [lo, len] with s^2 <= q (lo if none). */
    double q = (double)len * cs.lat / (cs.n2 * cs.ps);
    size_t a = lo, b = len;
    while (a < b) {
        size_t mid = a + (b - a + 1) / 2;
        if ((double)mid * (double)mid <= q)
            a = mid;
        else
            b = mid - 1;
    }
    size_t star = a; /* B is least in [star, star + 1] (or at lo) */

    /* 2. First guess. */
    size_t kc = ceil_div(len, star);
    for (size_t k = kc > 1 ? kc - 1 : 1; k <= kc + 1; k++)
        chain_try(&cs, ceil_div(len, k));
    chain_try(&cs, star);
    chain_try(&cs, star + 1);

    /* 3. [sa, sb] = the sizes with B(s) <= best: B falls up to star and
     * rises from star + 1 on, so each side is one bisection. */
    for (a = lo, b = star; a < b;) { /* the least s <= star with B(s) <= best */
        size_t mid = a + (b - a) / 2;
        if (chain_bound(&cs, mid) <= cs.best_cost)
            b = mid;
        else
            a = mid + 1;
    }
    size_t sa = a;
    for (a = star, b = len; a < b;) { /* the largest s >= star with B(s) <= best */
        size_t mid = a + (b - a + 1) / 2;
        if (chain_bound(&cs, mid) <= cs.best_cost)
            a = mid;
        else
            b = mid - 1;
    }
    size_t sb = a;
    size_t ka = ceil_div(len, sb), kb = ceil_div(len, sa);
    /* Written so that sb or kb == SIZE_MAX cannot wrap the counter. */
    if (sb - sa <= kb - ka) {
        for (size_t s = sa;; s++) {
            chain_try(&cs, s);
            if (s == sb)
                break;
        }
    } else {
        for (size_t k = ka;; k++) {
            chain_try(&cs, ceil_div(len, k));
            if (k == kb)
                break;
        }
    }
    return cs.best;
}
