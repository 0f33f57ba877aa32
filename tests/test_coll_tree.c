/*
 * test_coll_tree.c — communication trees and chain segments
 * (src/collectives/tree.c).
 *
 *   - binomial tree, n = 1..300, 1024, 4097 and INT32_MAX: a spanning tree
 *     (parents lead to 0), children exactly the inverse of parent, subtree
 *     sizes equal to counted descendants, children in send order (largest
 *     k first) so that a broadcast ends in ceil(log2 n) rounds;
 *   - postal model: the dissertation's example trees verbatim; CSR
 *     consistency for many (n, lambda), fractional lambdas included, with
 *     exact-size heap arrays (ASan); reception times read off the tree
 *     agree with tree_postal_reach and with the finish time; lambda = 1
 *     finishes in ceil(log2 n); tree_postal_reach against the recursion
 *     tabulated here, and its saturation;
 *   - chain segment: edge cases and clamps, monotone in latency and n,
 *     and within 1% of (in fact equal to) the best T(s) found by scanning
 *     every s.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/tree.h"
#include "harness.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static int ceil_log2(int64_t n)
{
    int r = 0;
    while (((int64_t)1 << r) < n)
        r++;
    return r;
}

/* ---- binomial ----------------------------------------------------------- */

/* Every property for one n; returns the number of violations. */
static int binomial_check(int32_t n)
{
    int bad = 0;
    int32_t *seen = calloc((size_t)n, sizeof *seen);
    int32_t *desc = calloc((size_t)n, sizeof *desc);
    int *round = calloc((size_t)n, sizeof *round);
    int32_t kids[32];
    if (!seen || !desc || !round)
        abort();
    bad += tree_binomial_parent(0, n) != -1;
    for (int32_t u = 0; u < n; u++) { /* walk up: u counts in each ancestor's subtree */
        int32_t a = u;
        for (int steps = 0; steps <= 32; steps++) {
            desc[a]++;
            int32_t p = tree_binomial_parent(a, n);
            if (a == 0 || p < 0 || p >= a) { /* the root, or not strictly upward */
                bad += a != 0;
                break;
            }
            a = p;
        }
    }
    bad += desc[0] != n; /* every node reached the root */
    int maxround = 0;
    for (int32_t v = 0; v < n; v++) { /* v < child, so round[v] is final here */
        int c = tree_binomial_children(v, n, kids, 32);
        int32_t sum = 1;
        for (int i = 0; i < c; i++) {
            bad += kids[i] <= v || kids[i] >= n || tree_binomial_parent(kids[i], n) != v;
            bad += i > 0 && kids[i] - v >= kids[i - 1] - v; /* largest 2^k first */
            seen[kids[i]]++;
            sum += tree_binomial_subtree(kids[i], n);
            round[kids[i]] = round[v] + i + 1; /* one send per round, in order */
            if (round[kids[i]] > maxround)
                maxround = round[kids[i]];
        }
        bad += tree_binomial_subtree(v, n) != desc[v] || sum != desc[v];
    }
    for (int32_t v = 0; v < n; v++)
        bad += seen[v] != (v != 0); /* each non-root is exactly one child */
    bad += maxround != ceil_log2(n);
    free(seen);
    free(desc);
    free(round);
    return bad;
}

static void test_binomial(void)
{
    int bad = 0;
    for (int32_t n = 1; n <= 300; n++)
        bad += binomial_check(n);
    is_int(bad, 0);
    is_int(binomial_check(1024), 0);
    is_int(binomial_check(4097), 0);

    int32_t k[32];
    is_int(tree_binomial_children(0, 8, k, 32), 3);
    ok(k[0] == 4 && k[1] == 2 && k[2] == 1);
    is_int(tree_binomial_children(4, 7, k, 32), 2);
    ok(k[0] == 6 && k[1] == 5);
    is_int(tree_binomial_children(6, 7, k, 32), 0); /* 7 is past n */
    is_int(tree_binomial_subtree(4, 7), 3);
    is_int(tree_binomial_subtree(6, 7), 1);
    is_int(tree_binomial_parent(6, 7), 4);

    /* max truncates to the largest subtrees; nothing written past it. */
    k[3] = 77;
    is_int(tree_binomial_children(0, 1000, k, 3), 3);
    ok(k[0] == 512 && k[1] == 256 && k[2] == 128 && k[3] == 77);
    is_int(tree_binomial_children(0, 1000, NULL, 0), 0);

    /* Out of range. */
    is_int(tree_binomial_parent(-1, 8), -1);
    is_int(tree_binomial_parent(8, 8), -1);
    is_int(tree_binomial_children(8, 8, k, 32), 0);
    is_int(tree_binomial_subtree(8, 8), 0);
    is_int(tree_binomial_subtree(-3, 8), 0);

    /* Near INT32_MAX: no overflow, 31 children of the root. */
    const int32_t big = INT32_MAX;
    is_int(tree_binomial_children(0, big, k, 32), 31);
    ok(k[0] == (1 << 30) && k[30] == 1);
    is_int(tree_binomial_subtree(1 << 30, big), (1 << 30) - 1);
    is_int(tree_binomial_subtree(0, big), big);
    is_int(tree_binomial_parent(big - 1, big), big - 3); /* ...110 -> ...100 */
    is_int(tree_binomial_children(1 << 30, big, k, 32), 30);
    is_int(k[0], (1 << 30) + (1 << 29));
}

/* ---- postal ------------------------------------------------------------- */

typedef struct ptree {
    int32_t n, *parent, *first, *kids;
    uint64_t finish, *recv; /* reception times read off the CSR */
} ptree;

/* Build with exact-size heap arrays, so ASan sees any overrun. */
static ptree ptree_build(int32_t n, uint32_t lambda)
{
    ptree t = {n, NULL, NULL, NULL, 0, NULL};
    uint64_t *scratch = malloc(4 * (size_t)n * sizeof *scratch);
    t.parent = malloc((size_t)n * sizeof *t.parent);
    t.first = malloc(((size_t)n + 1) * sizeof *t.first);
    t.kids = n > 1 ? malloc(((size_t)n - 1) * sizeof *t.kids) : NULL;
    t.recv = malloc((size_t)n * sizeof *t.recv);
    if (!scratch || !t.parent || !t.first || (n > 1 && !t.kids) || !t.recv)
        abort();
    t.finish = tree_postal(n, lambda, t.parent, t.first, t.kids, scratch);
    free(scratch);
    return t;
}

static void ptree_free(ptree *t)
{
    free(t->parent);
    free(t->first);
    free(t->kids);
    free(t->recv);
}

/* CSR and parent agree, the tree spans; fills recv: the i-th child of v
 * (0-based) was sent i units after v received, and arrives lambda later.
 * Returns the number of violations. */
static int ptree_check(ptree *t, uint32_t lambda)
{
    int bad = 0;
    int32_t n = t->n;
    uint64_t lam = lambda < 1000 ? 1000 : lambda, maxrecv = 0;
    bad += t->parent[0] != -1 || t->first[0] != 0 || t->first[n] != n - 1;
    t->recv[0] = 0;
    for (int32_t p = 1; p < n; p++)
        bad += t->parent[p] < 0 || t->parent[p] >= p; /* informed before it sends */
    for (int32_t v = 0; v < n; v++) {
        bad += t->first[v + 1] < t->first[v];
        for (int32_t i = t->first[v]; i < t->first[v + 1] && !bad; i++) {
            int32_t c = t->kids[i];
            bad += c <= 0 || c >= n || t->parent[c] != v;
            bad += i > t->first[v] && c <= t->kids[i - 1]; /* send order = creation order */
            if (!bad) {
                t->recv[c] = t->recv[v] + (uint64_t)(i - t->first[v]) * 1000 + lam;
                if (t->recv[c] > maxrecv)
                    maxrecv = t->recv[c];
            }
        }
    }
    bad += maxrecv != t->finish;
    return bad;
}

static int kids_are(const ptree *t, int32_t v, const int32_t *want, int32_t cnt)
{
    if (t->first[v + 1] - t->first[v] != cnt)
        return 0;
    return memcmp(t->kids + t->first[v], want, (size_t)cnt * sizeof *want) == 0;
}

static void test_postal_examples(void)
{
    ptree t = ptree_build(4, 2000);
    is_int(ptree_check(&t, 2000), 0);
    ok(kids_are(&t, 0, (const int32_t[]){1, 2, 3}, 3));
    ptree_free(&t);

    t = ptree_build(8, 2000);
    is_int(ptree_check(&t, 2000), 0);
    ok(kids_are(&t, 0, (const int32_t[]){1, 2, 3, 5}, 4));
    ok(kids_are(&t, 1, (const int32_t[]){4, 6}, 2));
    ok(kids_are(&t, 2, (const int32_t[]){7}, 1));
    is_size(t.finish, 5000);
    ptree_free(&t);

    t = ptree_build(16, 2000);
    is_int(ptree_check(&t, 2000), 0);
    ok(kids_are(&t, 0, (const int32_t[]){1, 2, 3, 5, 8, 13}, 6));
    ok(kids_are(&t, 1, (const int32_t[]){4, 6, 9, 14}, 4));
    ok(kids_are(&t, 2, (const int32_t[]){7, 10, 15}, 3));
    ok(kids_are(&t, 3, (const int32_t[]){11}, 1));
    ok(kids_are(&t, 4, (const int32_t[]){12}, 1));
    is_size(t.finish, 7000);
    ptree_free(&t);

    /* n = 1: kids may be NULL; finish 0. */
    int32_t parent[1] = {5}, first[2] = {5, 5};
    uint64_t scratch[4];
    is_size(tree_postal(1, 2000, parent, first, NULL, scratch), 0);
    ok(parent[0] == -1 && first[0] == 0 && first[1] == 0);
    is_size(tree_postal(0, 2000, NULL, NULL, NULL, NULL), 0);
}

static const uint32_t lambdas[] = {1000, 2000, 3000, 4000, 5000, 1500, 2500, 1250, 3700};

/* Nodes with recv <= t in the tree equal min(n, F(t)) at every time where
 * either side can change (each recv time, and just before it). */
static int reach_agrees(const ptree *t, uint32_t lambda)
{
    int bad = 0;
    for (int32_t i = 0; i < t->n; i++) {
        for (int d = 0; d < 2; d++) {
            if (d == 1 && t->recv[i] == 0)
                continue;
            uint64_t at = t->recv[i] - (uint64_t)d, cnt = 0;
            for (int32_t j = 0; j < t->n; j++)
                cnt += t->recv[j] <= at;
            uint64_t f = tree_postal_reach(lambda, at);
            bad += cnt != (f < (uint64_t)t->n ? f : (uint64_t)t->n);
        }
    }
    /* The finish is the least t with F(t) >= n. */
    bad += tree_postal_reach(lambda, t->finish) < (uint64_t)t->n;
    bad += t->finish > 0 && tree_postal_reach(lambda, t->finish - 1) >= (uint64_t)t->n;
    return bad;
}

static void test_postal_trees(void)
{
    static const int32_t sizes[] = {1, 2, 3, 5, 17, 64, 100, 127, 128, 129, 200, 333, 1000};
    int bad = 0, trees = 0;
    for (size_t li = 0; li < COUNT_OF(lambdas); li++) {
        for (size_t si = 0; si < COUNT_OF(sizes); si++) {
            ptree t = ptree_build(sizes[si], lambdas[li]);
            int b = ptree_check(&t, lambdas[li]);
            b += b ? 0 : reach_agrees(&t, lambdas[li]);
            if (b)
                note("n %d lambda %u: %d violations", sizes[si], lambdas[li], b);
            bad += b;
            trees++;
            ptree_free(&t);
        }
    }
    ok_msg(bad == 0, "%d trees consistent and matching tree_postal_reach", trees);

    /* Every n up to 300 for a few lambdas, structure only. */
    bad = 0;
    for (int32_t n = 1; n <= 300; n++) {
        static const uint32_t ls[] = {1000, 1500, 2000, 7300, 0 /* taken as 1000 */};
        for (size_t li = 0; li < COUNT_OF(ls); li++) {
            ptree t = ptree_build(n, ls[li]);
            bad += ptree_check(&t, ls[li]);
            ptree_free(&t);
        }
    }
    is_int(bad, 0);

    /* lambda = 1: binomial-shaped, every n finishes in ceil(log2 n). */
    bad = 0;
    for (int32_t n = 1; n <= 200; n++) {
        ptree t = ptree_build(n, 1000);
        bad += t.finish != 1000u * (uint64_t)ceil_log2(n);
        ptree_free(&t);
    }
    is_int(bad, 0);
}

/* F_lambda(t) tabulated from the recursion on the grid of gcd(1000,
 * lambda), where every time the recursion visits lies. */
static void test_postal_reach(void)
{
    static uint64_t F[20000];
    int bad = 0;
    for (size_t li = 0; li < COUNT_OF(lambdas); li++) {
        uint64_t lam = lambdas[li], g = 1000, b = lam;
        while (b) {
            uint64_t r = g % b;
            g = b;
            b = r;
        }
        uint64_t one = 1000 / g, lg = lam / g;
        for (size_t i = 0; i < COUNT_OF(F); i++) {
            F[i] = i < lg ? 1 : F[i - one] + F[i - lg];
            if (F[i] > (uint64_t)1 << 60) /* keep within the unsaturated range */
                break;
            bad += tree_postal_reach((uint32_t)lam, i * g) != F[i];
            /* F is flat between grid points. */
            bad += tree_postal_reach((uint32_t)lam, i * g + g - 1) != F[i];
        }
    }
    is_int(bad, 0);

    const uint64_t cap = UINT64_MAX / 2;
    is_size(tree_postal_reach(1000, 0), 1);
    is_size(tree_postal_reach(1000, 62000), (uint64_t)1 << 62);
    is_size(tree_postal_reach(1000, 62999), (uint64_t)1 << 62);
    is_size(tree_postal_reach(1000, 63000), cap); /* 2^63 > cap */
    is_size(tree_postal_reach(1000, UINT64_MAX), cap);
    is_size(tree_postal_reach(2000, 2000), 2);
    is_size(tree_postal_reach(2000, 1999), 1);
    is_size(tree_postal_reach(UINT32_MAX, UINT64_MAX), cap);
    is_size(tree_postal_reach(UINT32_MAX, UINT32_MAX - 1), 1);
    is_size(tree_postal_reach(UINT32_MAX, 64ull * UINT32_MAX), cap);
    is_size(tree_postal_reach(0, 5000), tree_postal_reach(1000, 5000));
}

/* ---- chain segment ------------------------------------------------------ */

/* T(s) in picoseconds, exact for the small cases scanned here. */
static uint64_t cost(size_t len, int32_t n, uint64_t lat, uint64_t ps, size_t s)
{
    uint64_t k = (len + s - 1) / s;
    return ((uint64_t)n - 2 + k) * (lat * 1000 + (uint64_t)s * ps);
}

/* Scan every s in [lo, len]: 0 if tree_chain_segment is off by more than
 * 1%, 1 if within, 2 if exactly the best. */
static int chain_vs_scan(size_t len, int32_t n, uint64_t lat, uint64_t ps, size_t mn,
                         uint32_t mx)
{
    size_t lo = mn > 0 ? mn : 1;
    if (mx > 0 && (len + mx - 1) / mx > lo)
        lo = (len + mx - 1) / mx;
    if (lo > len)
        lo = len;
    uint64_t best = UINT64_MAX;
    for (size_t s = lo; s <= len; s++) {
        uint64_t t = cost(len, n, lat, ps, s);
        best = t < best ? t : best;
    }
    size_t got = tree_chain_segment(len, n, lat, ps, mn, mx);
    uint64_t tg = got >= lo && got <= len ? cost(len, n, lat, ps, got) : UINT64_MAX;
    if ((double)tg > 1.01 * (double)best) {
        note("len %zu n %d lat %llu ps %llu min %zu max %u: s %zu T %llu best %llu", len, n,
             (unsigned long long)lat, (unsigned long long)ps, mn, mx, got,
             (unsigned long long)tg, (unsigned long long)best);
        return 0;
    }
    return tg == best ? 2 : 1;
}

static void test_chain(void)
{
    is_size(tree_chain_segment(0, 8, 1000, 100, 0, 0), 0);
    is_size(tree_chain_segment(1000, 2, 1000, 100, 0, 0), 1000);
    is_size(tree_chain_segment(1000, 1, 1000, 100, 0, 0), 1000);
    is_size(tree_chain_segment(1000, 8, 1000, 0, 0, 0), 1000);
    is_size(tree_chain_segment(1000, 8, 1000, 100, 5000, 0), 1000); /* min_seg > len */
    is_size(tree_chain_segment(1000, 8, 0, 100, 0, 0), 1);          /* no latency: tiny */
    /* 15 segments of 67 bytes beat 16 of 64 (the last one short). */
    is_size(tree_chain_segment(1000, 8, 0, 100, 64, 0), 67);
    is_size(tree_chain_segment(1000, 8, 0, 100, 0, 3), 334); /* ceil(1000 / 3) */
    size_t huge = tree_chain_segment((size_t)1 << 40, 1000, 2000, 100, 0, 0);
    ok(huge > 0 && huge < (size_t)1 << 40);

    /* Monotone: latency up -> segments no smaller; n up -> no larger. */
    static const size_t lens[] = {1000, 65536, 1000000, (size_t)1 << 30};
    static const uint64_t lats[] = {0, 10, 100, 500, 1000, 5000, 20000, 100000};
    static const int32_t ns[] = {3, 4, 5, 8, 16, 64, 256, 4096};
    static const uint64_t pss[] = {1, 10, 100, 1000};
    static size_t seg[COUNT_OF(ns)][COUNT_OF(lats)];
    int bad = 0;
    for (size_t li = 0; li < COUNT_OF(lens); li++) {
        for (size_t pi = 0; pi < COUNT_OF(pss); pi++) {
            for (size_t ni = 0; ni < COUNT_OF(ns); ni++) {
                for (size_t ai = 0; ai < COUNT_OF(lats); ai++) {
                    size_t s = tree_chain_segment(lens[li], ns[ni], lats[ai], pss[pi], 0, 0);
                    seg[ni][ai] = s;
                    bad += s < 1 || s > lens[li];
                    bad += ai > 0 && s < seg[ni][ai - 1];
                    bad += ni > 0 && s > seg[ni - 1][ai];
                }
            }
        }
    }
    is_int(bad, 0);

    /* Against every s in [lo, len]. */
    static const size_t slens[] = {1, 7, 100, 1000, 4096, 100000};
    static const int32_t sns[] = {3, 4, 8, 64};
    static const uint64_t slats[] = {1, 50, 1000, 20000};
    static const uint64_t spss[] = {10, 100, 1000, 5000};
    static const size_t mins[] = {0, 64};
    static const uint32_t maxs[] = {0, 16};
    int cases = 0, within = 0, exact = 0;
    for (size_t a = 0; a < COUNT_OF(slens); a++)
        for (size_t b = 0; b < COUNT_OF(sns); b++)
            for (size_t c = 0; c < COUNT_OF(slats); c++)
                for (size_t d = 0; d < COUNT_OF(spss); d++)
                    for (size_t e = 0; e < 4; e++) {
                        int r = chain_vs_scan(slens[a], sns[b], slats[c], spss[d],
                                              mins[e & 1], maxs[e >> 1]);
                        cases++;
                        within += r > 0;
                        exact += r == 2;
                    }
    ok_msg(within == cases, "%d cases within 1%% of the best segment size", cases);
    is_int(exact, cases); /* in fact the exact minimum */
}

int main(void)
{
    subtest("binomial", test_binomial);
    subtest("postal_examples", test_postal_examples);
    subtest("postal_trees", test_postal_trees);
    subtest("postal_reach", test_postal_reach);
    subtest("chain", test_chain);
    return done_testing();
}
