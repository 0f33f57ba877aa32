/*
 * test_coll.c — collectives (quay_coll.h) on N engines over nicsim, every
 * link reordering and the scheduler seeded: each algorithm at every rank
 * count 1..33 (powers of two and not; a shorter list under sanitizers),
 * several roots, sizes across the eager/rendezvous boundary, in place and
 * not, commutative and non-commutative ops; then every bcast, reduce and
 * allreduce algorithm at 64 KiB + 3 B and 1 MiB at a few rank counts; all
 * checked against results computed here sequentially. Also:
 * barrier semantics (nobody leaves before the last arrives), messages for
 * collectives not yet called (held, then consumed), many collectives in
 * flight on several communicators, argument errors, bounds, and faults.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

#include "engine/internal.h" /* a request's state */
#include "harness.h"
#include "simworld.h"

#define MAXN SW_MAX_RANKS

typedef simworld world;
typedef sw_cfg_fn cfg_fn;

static uint64_t g_seed = 1;

static int world_new(world *w, int n, cfg_fn tweak, void *arg)
{
    return sw_new(w, n, g_seed++, tweak, arg, 1);
}

/* Every request done without error; frees them. */
static int all_good(world *w, quay_req **q, int n)
{
    int good = 1;
    for (int r = 0; r < n; r++) {
        quay_status st;
        if (q[r] == NULL || !quay_req_test(q[r], &st) || st.error != 0) {
            if (good)
                note("rank %d: %s (error %s)", r, q[r] == NULL ? "no request"
                     : quay_req_test(q[r], &st) ? "done" : "not done",
                     q[r] && quay_req_test(q[r], &st) ? quay_strerror(st.error) : "-");
            good = 0;
        }
        if (q[r] != NULL)
            quay_req_free(w->e[r], q[r]);
    }
    return good;
}

/* ---- operands ----------------------------------------------------------------- */

/* A non-commutative, associative op on uint64: affine maps x -> a x + b
 * mod 2^32, a in the high half; u op v = u after v. */
static uint64_t affine(uint64_t u, uint64_t v)
{
    uint32_t ua = (uint32_t)(u >> 32), ub = (uint32_t)u, va = (uint32_t)(v >> 32),
             vb = (uint32_t)v;
    return (uint64_t)(ua * va) << 32 | (uint32_t)(ua * vb + ub);
}

static int user_calls;

static void affine_fn(const void *in, void *inout, size_t count, quay_dtype dt, void *ctx)
{
    (void)dt;
    (void)ctx;
    user_calls++;
    const uint64_t *a = in;
    uint64_t *b = inout;
    for (size_t i = 0; i < count; i++) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        y = affine(x, y);
        memcpy(b + i, &y, 8);
    }
}

enum { OP_SUM_I32, OP_MAX_F64, OP_AFFINE, OP_BXOR_U8, NOPS };

static quay_dtype op_type(int which)
{
    return which == OP_SUM_I32   ? QUAY_INT32
           : which == OP_MAX_F64 ? QUAY_DOUBLE
           : which == OP_AFFINE  ? QUAY_UINT64
                                 : QUAY_UINT8;
}

static quay_op op_of(int which)
{
    quay_op op = {QUAY_OP_SUM, 1, NULL, NULL};
    if (which == OP_MAX_F64)
        op.kind = QUAY_OP_MAX;
    if (which == OP_BXOR_U8)
        op.kind = QUAY_OP_BXOR;
    if (which == OP_AFFINE) {
        op.kind = QUAY_OP_USER;
        op.commutative = 0;
        op.fn = affine_fn;
    }
    return op;
}

/* Rank r's element i. */
static void operand(int which, int r, size_t i, void *out)
{
    uint64_t h = (uint64_t)(r + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i + 7) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    if (which == OP_SUM_I32) {
        int32_t v = (int32_t)(uint32_t)h;
        memcpy(out, &v, 4);
    } else if (which == OP_MAX_F64) {
        double d = (double)(int32_t)(uint32_t)h / 7.0;
        memcpy(out, &d, 8);
    } else if (which == OP_AFFINE) {
        uint64_t v = (h | 1ull << 32) | 1u; /* odd a: keeps information */
        memcpy(out, &v, 8);
    } else {
        uint8_t b = (uint8_t)h;
        memcpy(out, &b, 1);
    }
}

/* The reduction of ranks 0..n-1's element i, in rank order. */
static void expected(int which, int n, size_t i, void *out)
{
    uint8_t acc[8], x[8];
    operand(which, 0, i, acc);
    for (int r = 1; r < n; r++) {
        operand(which, r, i, x);
        if (which == OP_SUM_I32) {
            uint32_t a, b;
            memcpy(&a, acc, 4);
            memcpy(&b, x, 4);
            a += b;
            memcpy(acc, &a, 4);
        } else if (which == OP_MAX_F64) {
            double a, b;
            memcpy(&a, acc, 8);
            memcpy(&b, x, 8);
            if (b > a)
                memcpy(acc, &b, 8);
        } else if (which == OP_AFFINE) {
            uint64_t a, b;
            memcpy(&a, acc, 8);
            memcpy(&b, x, 8);
            a = affine(a, b);
            memcpy(acc, &a, 8);
        } else {
            acc[0] ^= x[0];
        }
    }
    memcpy(out, acc, quay_dtype_size(op_type(which)));
}

static void *fill_operands(int which, int r, size_t count)
{
    size_t es = quay_dtype_size(op_type(which));
    uint8_t *b = malloc(count * es + 1);
    for (size_t i = 0; i < count; i++)
        operand(which, r, i, b + i * es);
    return b;
}

/* The sequential reference: acc = acc op x over count elements, acc
 * holding the lower ranks' reduction (as expected() does per element). */
static void fold(int which, uint8_t *acc, const uint8_t *x, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (which == OP_SUM_I32) {
            uint32_t a, b;
            memcpy(&a, acc + 4 * i, 4);
            memcpy(&b, x + 4 * i, 4);
            a += b;
            memcpy(acc + 4 * i, &a, 4);
        } else if (which == OP_MAX_F64) {
            double a, b;
            memcpy(&a, acc + 8 * i, 8);
            memcpy(&b, x + 8 * i, 8);
            if (b > a)
                memcpy(acc + 8 * i, &b, 8);
        } else if (which == OP_AFFINE) {
            uint64_t a, b;
            memcpy(&a, acc + 8 * i, 8);
            memcpy(&b, x + 8 * i, 8);
            a = affine(a, b);
            memcpy(acc + 8 * i, &a, 8);
        } else {
            acc[i] ^= x[i];
        }
    }
}

/* x0 op x1 op ... op x(n-1) of the operand buffers, computed here one
 * rank after another into *out (malloc'd). Returns 0 if a spot check
 * against expected() (written independently, element by element) fails,
 * so that the two cannot drift apart. */
static int reference(int which, int n, uint8_t *const *sb, size_t count, uint8_t **out)
{
    size_t es = quay_dtype_size(op_type(which));
    uint8_t *ref = malloc(count * es + 1);
    memcpy(ref, sb[0], count * es);
    for (int r = 1; r < n; r++)
        fold(which, ref, sb[r], count);
    *out = ref;
    uint8_t want[8];
    for (size_t i = 0; i < count; i += 1 + count / 7) {
        expected(which, n, i, want);
        if (memcmp(ref + i * es, want, es) != 0) {
            note("reference: element %zu disagrees with expected()", i);
            return 0;
        }
    }
    return 1;
}

static int check_result(int which, const uint8_t *ref, const uint8_t *b, size_t count)
{
    size_t es = quay_dtype_size(op_type(which));
    if (count == 0 || memcmp(b, ref, count * es) == 0)
        return 1;
    for (size_t i = 0; i < count; i++)
        if (memcmp(b + i * es, ref + i * es, es) != 0) {
            note("element %zu of %zu differs", i, count);
            break;
        }
    return 0;
}

/* ---- configs ----------------------------------------------------------------- */

typedef struct algs {
    uint32_t barrier, bcast, reduce, allreduce;
    int large; /* the large-message pass: the cost model's segment */
} algs;

static void set_algs(quay_config *c, void *arg)
{
    const algs *a = arg;
    c->coll_barrier = a->barrier;
    c->coll_bcast = a->bcast;
    c->coll_reduce = a->reduce;
    c->coll_allreduce = a->allreduce;
    c->coll_tree_degree = 3;
    c->coll_segment = a->large ? 0 : 700; /* several segments at the small sizes */
}

/* Sanitizer builds run 10x slower: they take the shorter list (memory
 * errors show on few runs; the plain builds cover every rank count
 * 1..SW_MAX_RANKS). */
#ifdef QUAY_TEST_SANITIZED
static const int ns[] = {1, 2, 3, 5, 8, 13, 17, 33};
static const int big_ns[] = {3, 33};
#else
static const int ns[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17,
                         18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33};
static const int big_ns[] = {2, 5, 16, 33};
#endif
#define NNS ((int)(sizeof ns / sizeof ns[0]))
#define NBIG ((int)(sizeof big_ns / sizeof big_ns[0]))

/* "n = 1..33" or "n = {1, 2, 3, 5, ...}": the rank counts run. */
static const char *ns_desc(void)
{
    static char buf[200];
    int contiguous = 1;
    for (int k = 1; k < NNS; k++)
        contiguous &= ns[k] == ns[k - 1] + 1;
    if (contiguous) {
        snprintf(buf, sizeof buf, "n = %d..%d", ns[0], ns[NNS - 1]);
        return buf;
    }
    size_t at = (size_t)snprintf(buf, sizeof buf, "n = {");
    for (int k = 0; k < NNS && at < sizeof buf; k++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%d", k ? ", " : "", ns[k]);
    if (at < sizeof buf)
        snprintf(buf + at, sizeof buf - at, "}");
    return buf;
}

/* ---- barrier ----------------------------------------------------------------- */

static void t_barrier(void)
{
    for (uint32_t alg = 1; alg <= 3; alg++) {
        int good = 1;
        for (int k = 0; k < NNS; k++) {
            int n = ns[k];
            algs a = {.barrier = alg};
            world w;
            if (world_new(&w, n, set_algs, &a) != 0) {
                good = 0;
                break;
            }
            for (int rep = 0; rep < 3; rep++) {
                /* All but the last rank arrive: nobody may leave. */
                quay_req *q[MAXN] = {0};
                int last = (rep * 5) % n;
                for (int r = 0; r < n; r++)
                    if (r != last)
                        good &= quay_ibarrier(w.e[r], w.c[r], &q[r]) == 0;
                good &= sw_run(&w) == NICSIM_RUN_IDLE;
                for (int r = 0; r < n && n > 1; r++)
                    if (r != last && quay_req_test(q[r], NULL)) {
                        note("alg %u n %d: rank %d left early", alg, n, r);
                        good = 0;
                    }
                good &= quay_ibarrier(w.e[last], w.c[last], &q[last]) == 0;
                good &= sw_run(&w) == NICSIM_RUN_IDLE;
                good &= all_good(&w, q, n);
            }
            sw_free(&w);
        }
        ok_msg(good, "barrier algorithm %u: %s, the last arrival releases everyone", alg,
               ns_desc());
    }
}

/* ---- bcast -------------------------------------------------------------------- */

/* Byte i of a broadcast of len bytes from root: position-dependent
 * (no period), so a segment or chunk landing at the wrong offset shows. */
static uint8_t bcast_byte(size_t i, size_t len, int root)
{
    uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull ^ (uint64_t)len * 0xD6E8FEB86659FD93ull ^
                 (uint64_t)(root + 1) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    h *= 0x94D049BB133111EBull;
    return (uint8_t)(h >> 56);
}

/* One broadcast on w: every rank's buffer must equal the pattern, the
 * byte past the end untouched. */
static int bcast_case(world *w, size_t len, int root)
{
    int n = w->n, good = 1;
    uint8_t *buf[MAXN], *ref = malloc(len + 1);
    quay_req *q[MAXN] = {0};
    for (size_t i = 0; i < len; i++)
        ref[i] = bcast_byte(i, len, root);
    for (int r = 0; r < n; r++) {
        buf[r] = malloc(len + 1);
        if (r == root) {
            memcpy(buf[r], ref, len);
            buf[r][len] = 0;
        } else {
            memset(buf[r], 0xEE, len + 1);
        }
    }
    for (int r = 0; r < n; r++)
        good &= quay_ibcast(w->e[r], w->c[r], buf[r], len, root, &q[r]) == 0;
    good &= sw_run(w) == NICSIM_RUN_IDLE;
    good &= all_good(w, q, n);
    for (int r = 0; r < n; r++) {
        if ((len != 0 && memcmp(buf[r], ref, len) != 0) ||
            buf[r][len] != (r == root ? 0 : 0xEE)) {
            note("n %d len %zu root %d: rank %d wrong", n, len, root, r);
            good = 0;
        }
        free(buf[r]);
    }
    free(ref);
    return good;
}

static void t_bcast(void)
{
    static const size_t sizes[] = {0, 1, 100, 257, 3000, 20000};
    for (uint32_t alg = 1; alg <= 4; alg++) {
        int good = 1, runs = 0;
        for (int k = 0; k < NNS && good; k++) {
            int n = ns[k];
            algs a = {.bcast = alg};
            world w;
            if (world_new(&w, n, set_algs, &a) != 0) {
                good = 0;
                break;
            }
            for (size_t z = 0; z < sizeof sizes / sizeof sizes[0] && good; z++) {
                int roots[3] = {0, n - 1, n / 2};
                for (int ri = 0; ri < 3 && good; ri++) {
                    if (!bcast_case(&w, sizes[z], roots[ri])) {
                        note("bcast algorithm %u failed", alg);
                        good = 0;
                    }
                    runs++;
                }
            }
            sw_free(&w);
        }
        ok_msg(good, "bcast algorithm %u: %d runs (%s, 0..20000 B, 3 roots) correct", alg,
               runs, ns_desc());
    }
}

/* ---- reduce / allreduce -------------------------------------------------------- */

static int reduce_case(world *w, int which, size_t count, int root, int in_place, int all)
{
    int n = w->n, good = 1;
    size_t es = quay_dtype_size(op_type(which));
    uint8_t *sb[MAXN], *rb[MAXN];
    quay_req *q[MAXN] = {0};
    quay_op op = op_of(which);
    for (int r = 0; r < n; r++) {
        sb[r] = fill_operands(which, r, count);
        rb[r] = malloc(count * es + 1);
        memset(rb[r], 0xA5, count * es + 1);
        if (in_place && (all || r == root))
            memcpy(rb[r], sb[r], count * es);
    }
    uint8_t *ref;
    if (!reference(which, n, sb, count, &ref))
        good = 0;
    for (int r = 0; r < n; r++) {
        const void *s = in_place && (all || r == root) ? QUAY_IN_PLACE : sb[r];
        int rc = all ? quay_iallreduce(w->e[r], w->c[r], s, rb[r], count, op_type(which), &op,
                                       &q[r])
                     : quay_ireduce(w->e[r], w->c[r], s, rb[r], count, op_type(which), &op,
                                    root, &q[r]);
        if (rc != 0) {
            note("call: %s", quay_strerror(rc));
            good = 0;
        }
    }
    good &= sw_run(w) == NICSIM_RUN_IDLE;
    good &= all_good(w, q, n);
    for (int r = 0; r < n; r++) {
        if (all || r == root) {
            if (!check_result(which, ref, rb[r], count)) {
                note("op %d n %d count %zu root %d in_place %d all %d: rank %d wrong", which,
                     n, count, root, in_place, all, r);
                good = 0;
            }
            if (rb[r][count * es] != 0xA5)
                good = 0; /* wrote past the end */
        }
        free(sb[r]);
        free(rb[r]);
    }
    free(ref);
    return good;
}

static void t_reduce(void)
{
    static const size_t counts[] = {0, 1, 3, 40, 700};
    int good = 1, runs = 0;
    for (int k = 0; k < NNS && good; k++) {
        algs a = {.reduce = QUAY_REDUCE_BINOMIAL}; /* the only one */
        world w;
        if (world_new(&w, ns[k], set_algs, &a) != 0) {
            good = 0;
            break;
        }
        for (int which = 0; which < NOPS && good; which++)
            for (size_t z = 0; z < sizeof counts / sizeof counts[0] && good; z++)
                for (int root = 0; root < ns[k] && good; root += 1 + ns[k] / 3)
                    for (int ip = 0; ip < 2 && good; ip++) {
                        good &= reduce_case(&w, which, counts[z], root, ip, 0);
                        runs++;
                    }
        sw_free(&w);
    }
    ok_msg(good, "reduce (binomial): %d runs (%s, 4 ops, 0..700 elements, roots, in place "
                 "or not) in rank order", runs, ns_desc());
    ok_msg(user_calls > 0, "the user op was called (%d times)", user_calls);
}

static void t_allreduce(void)
{
    static const size_t counts[] = {0, 1, 5, 33, 300, 2000};
    for (uint32_t alg = 1; alg <= 3; alg++) {
        int good = 1, runs = 0;
        for (int k = 0; k < NNS && good; k++) {
            algs a = {.allreduce = alg};
            world w;
            if (world_new(&w, ns[k], set_algs, &a) != 0) {
                good = 0;
                break;
            }
            for (int which = 0; which < NOPS && good; which++)
                for (size_t z = 0; z < sizeof counts / sizeof counts[0] && good; z++)
                    for (int ip = 0; ip < 2 && good; ip++) {
                        good &= reduce_case(&w, which, counts[z], 0, ip, 1);
                        runs++;
                    }
            sw_free(&w);
        }
        ok_msg(good, "allreduce algorithm %u: %d runs (%s, 4 ops, 0..2000 elements, in place "
                     "or not) correct%s", alg, runs, ns_desc(),
               alg == 1 ? "" : " (non-commutative: recursive doubling)");
    }
    /* The automatic choice at each size. */
    int good = 1;
    for (int k = 0; k < NNS && good; k++) {
        world w;
        if (world_new(&w, ns[k], NULL, NULL) != 0) {
            good = 0;
            break;
        }
        /* The largest (470 KB) only at the rank counts of the older list:
         * the large-message pass below covers every algorithm beyond it. */
        size_t top = ns[k] <= 9 || ns[k] % 16 <= 1 || ns[k] == 11 || ns[k] == 13 ? 300000 : 20000;
        for (size_t count = 1; count <= top && good; count *= 7)
            good &= reduce_case(&w, OP_SUM_I32, count, 0, 0, 1);
        sw_free(&w);
    }
    ok_msg(good, "allreduce, automatic choice: %s, 1 .. 16807 elements (117649 at n <= 9, "
                 "11, 13, 16, 17, 32, 33)", ns_desc());
}

#define FEW_REQUESTS 16
static void few_requests(quay_config *c, void *arg)
{
    (void)arg;
    c->max_requests = FEW_REQUESTS;
}

/* ---- reused schedules ----------------------------------------------------------- */

/* A spare schedule built for the same shape is started again as it is
 * (coll.c coll_launch). A random sequence over seven shapes, more than
 * the engine keeps spare, so that shapes are reused, evicted and rebuilt
 * in every order; each call checked against the reference. */
static void t_reuse(void)
{
    static const int sizes[] = {2, 3, 5, 8};
    int good = 1, runs = 0;
    uint64_t rng = 0x5EEDu;
    for (int k = 0; k < 4 && good; k++) {
        int n = sizes[k];
        world w;
        if (world_new(&w, n, NULL, NULL) != 0) {
            good = 0;
            break;
        }
        for (int i = 0; i < 120 && good; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            switch ((rng >> 33) % 7) {
            case 0: {
                quay_req *q[MAXN] = {0};
                for (int r = 0; r < n; r++)
                    good &= quay_ibarrier(w.e[r], w.c[r], &q[r]) == 0;
                good &= sw_run(&w) == NICSIM_RUN_IDLE;
                good &= all_good(&w, q, n);
                break;
            }
            case 1: good &= reduce_case(&w, OP_SUM_I32, 1, 0, 0, 1); break;
            case 2: good &= reduce_case(&w, OP_SUM_I32, 1, 0, 1, 1); break;
            case 3: good &= reduce_case(&w, OP_AFFINE, 5, 0, 0, 1); break;
            case 4: good &= reduce_case(&w, OP_MAX_F64, 3, n - 1, 0, 0); break;
            case 5: good &= bcast_case(&w, 100, n / 2); break;
            default: good &= bcast_case(&w, 100, 0); break;
            }
            runs++;
        }
        sw_free(&w);
    }
    ok_msg(good, "reused schedules: %d calls over 7 shapes in random order (n = 2, 3, 5, 8) "
                 "correct", runs);

    /* A call refused for want of a request (QUAY_EAGAIN) leaves no
     * schedule behind that a later call of its shape could take for
     * built: the retried barrier must still wait for everyone. */
    world w;
    good = world_new(&w, 3, few_requests, NULL) == 0;
    quay_req *fill[FEW_REQUESTS] = {0}, *q[MAXN] = {0}, *warm[MAXN] = {0};
    int32_t sink[FEW_REQUESTS];
    for (int r = 0; r < 3; r++) /* an allreduce first: a spare of another shape */
        good &= quay_iallreduce(w.e[r], w.c[r], &sink[r], &sink[3 + r], 1, QUAY_INT32,
                                &(quay_op){QUAY_OP_SUM, 1, NULL, NULL}, &warm[r]) == 0;
    good &= sw_run(&w) == NICSIM_RUN_IDLE;
    good &= all_good(&w, warm, 3);
    int nfill = 0;
    while (nfill < FEW_REQUESTS &&
           quay_irecv(w.e[0], w.c[0], &sink[nfill], sizeof sink[nfill], 1, 99,
                      &fill[nfill]) == 0)
        nfill++;
    good &= quay_ibarrier(w.e[0], w.c[0], &q[0]) == QUAY_EAGAIN;
    for (int i = 0; i < nfill; i++)
        good &= quay_cancel(w.e[0], fill[i]) == 0 && quay_req_free(w.e[0], fill[i]) == 0;
    good &= sw_run(&w) == NICSIM_RUN_IDLE;
    good &= quay_ibarrier(w.e[0], w.c[0], &q[0]) == 0;
    good &= sw_run(&w) == NICSIM_RUN_IDLE;
    int early = quay_req_test(q[0], NULL);
    for (int r = 1; r < 3; r++)
        good &= quay_ibarrier(w.e[r], w.c[r], &q[r]) == 0;
    good &= sw_run(&w) == NICSIM_RUN_IDLE;
    good &= all_good(&w, q, 3);
    sw_free(&w);
    ok_msg(good && !early && nfill > 1,
           "a barrier refused for want of a request, then called again, waits for everyone "
           "(%d receives filled the pool)", nfill);
}

/* ---- large messages ------------------------------------------------------------- */

/* Every bcast, reduce and allreduce algorithm at 64 KiB + 3 B and 1 MiB
 * (count = bytes / element size, rounded down) at a few rank counts, the
 * segment from the cost model. The ops rotate so that each one appears
 * at 1 MiB at every n (one op per reduction run: the affine user op is
 * non-commutative, so it always gets recursive doubling); roots and in
 * place vary. */
static void t_large(void)
{
    static const size_t bytes[] = {65536 + 3, 1048576};
    int bad = 0, runs = 0, op_seen[NOPS] = {0};
    for (int k = 0; k < NBIG; k++) {
        int n = big_ns[k];
        for (size_t z = 0; z < sizeof bytes / sizeof bytes[0]; z++) {
            size_t len = bytes[z];
            int root = (int)(z + (size_t)k) % 2 ? n - 1 : n / 2;
            for (uint32_t alg = 1; alg <= 4; alg++) {
                algs a = {.bcast = alg, .large = 1};
                world w;
                if (world_new(&w, n, set_algs, &a) != 0 || !bcast_case(&w, len, root)) {
                    note("bcast algorithm %u n %d len %zu root %d failed", alg, n, len, root);
                    bad++;
                }
                sw_free(&w);
                runs++;
            }
            /* Reduce (binomial), then allreduce algorithms 1..3. */
            for (uint32_t alg = 0; alg <= 3; alg++) {
                /* At the largest n the byte op (a million elements, the
                 * most per-element work) goes to reduce, whose tree
                 * reduces each element n - 1 times in all; recursive
                 * doubling would do it n log n times. */
                int which = (int)(alg + 3 + (uint32_t)(NBIG - 1 - k) + (uint32_t)z) % NOPS;
                size_t count = len / quay_dtype_size(op_type(which));
                int ip = (int)(alg + (uint32_t)k) % 2;
                algs a = alg == 0 ? (algs){.reduce = QUAY_REDUCE_BINOMIAL, .large = 1}
                                  : (algs){.allreduce = alg, .large = 1};
                world w;
                if (world_new(&w, n, set_algs, &a) != 0 ||
                    !reduce_case(&w, which, count, alg == 0 ? root : 0, ip, alg != 0)) {
                    note("%s algorithm %u n %d op %d count %zu failed",
                         alg == 0 ? "reduce" : "allreduce", alg ? alg : 1, n, which, count);
                    bad++;
                }
                sw_free(&w);
                if (len == 1048576)
                    op_seen[which]++;
                runs++;
            }
        }
    }
    ok_msg(bad == 0, "%d large runs (64 KiB + 3 B and 1 MiB; every bcast algorithm, reduce, "
                     "every allreduce algorithm) match the sequential reference (%d failed)",
           runs, bad);
    int all_ops = 1;
    for (int i = 0; i < NOPS; i++)
        all_ops &= op_seen[i] > 0;
    ok_msg(all_ops, "every op ran at 1 MiB");
}

/* ---- early messages, concurrency, several communicators ------------------------ */

static void t_concurrent(void)
{
    int good = 1;
    for (int trial = 0; trial < 20 && good; trial++) {
        int n = 3 + trial % 6;
        world w;
        if (world_new(&w, n, NULL, NULL) != 0) {
            good = 0;
            break;
        }
        /* A second communicator: the odd ranks, in reverse order. */
        int32_t map[MAXN];
        int m = 0;
        for (int r = n - 1; r >= 0; r--)
            if (r % 2 == 1)
                map[m++] = r;
        quay_comm *odd[MAXN] = {0};
        for (int r = 1; r < n; r += 2)
            good &= quay_comm_create(w.e[r], 9, m, map, &odd[r]) == 0;
        enum { K = 6 };
        quay_req *q[MAXN][K + 2];
        memset(q, 0, sizeof q);
        int32_t vals[MAXN][K], outs[MAXN][K];
        int32_t bc[MAXN][K][40];
        int32_t ov[MAXN], oo[MAXN];
        /* Rank r calls the K world collectives only after the previous
         * ranks have run a while: their messages arrive early. */
        for (int r = n - 1; r >= 0; r--) {
            for (int k = 0; k < K; k++) {
                vals[r][k] = r * 100 + k;
                memset(bc[r][k], r == k % n ? k + 1 : 0, sizeof bc[r][k]);
                int rc;
                if (k % 3 == 0)
                    rc = quay_iallreduce(w.e[r], w.c[r], &vals[r][k], &outs[r][k], 1,
                                         QUAY_INT32, &(quay_op){QUAY_OP_SUM, 1, NULL, NULL},
                                         &q[r][k]);
                else if (k % 3 == 1)
                    rc = quay_ibcast(w.e[r], w.c[r], bc[r][k], sizeof bc[r][k], k % n, &q[r][k]);
                else
                    rc = quay_ibarrier(w.e[r], w.c[r], &q[r][k]);
                good &= rc == 0;
            }
            if (odd[r] != NULL) {
                ov[r] = r;
                good &= quay_iallreduce(w.e[r], odd[r], &ov[r], &oo[r], 1, QUAY_INT32,
                                        &(quay_op){QUAY_OP_MAX, 1, NULL, NULL}, &q[r][K]) == 0;
            }
            nicsim_touch(w.sim, r);
            for (int s = 0; s < 200; s++)
                if (nicsim_step(w.sim) <= 0)
                    break;
        }
        good &= sw_run(&w) == NICSIM_RUN_IDLE;
        for (int r = 0; r < n; r++) {
            for (int k = 0; k <= K; k++) {
                quay_status st;
                if (k == K && odd[r] == NULL)
                    continue;
                if (!quay_req_test(q[r][k], &st) || st.error != 0) {
                    note("n %d rank %d collective %d not done", n, r, k);
                    good = 0;
                }
                quay_req_free(w.e[r], q[r][k]);
            }
            for (int k = 0; k < K; k++) {
                if (k % 3 == 0) {
                    int32_t want = 0;
                    for (int x = 0; x < n; x++)
                        want += x * 100 + k;
                    good &= outs[r][k] == want;
                } else if (k % 3 == 1) {
                    for (int i = 0; i < 40; i++)
                        good &= bc[r][k][i] == (int32_t)((k + 1) * 0x01010101);
                }
            }
            if (odd[r] != NULL)
                good &= oo[r] == (n % 2 == 0 ? n - 1 : n - 2);
        }
        for (int r = 1; r < n; r += 2)
            good &= quay_comm_free(w.e[r], odd[r]) == 0;
        for (int r = 0; r < n; r++) {
            quay_stats st;
            quay_engine_stats(w.e[r], &st);
            good &= st.reqs_in_use == 0 && st.umsgs_in_use == 0;
        }
        sw_free(&w);
    }
    ok_msg(good, "20 runs: 6 collectives in flight per rank on the world and 1 on a "
                 "sub-communicator, called late by most ranks (early messages held)");
}

/* ---- application bypass ------------------------------------------------------------ */

static void bypass_cfg(quay_config *c, void *arg)
{
    (void)arg;
    c->coll_bypass = 1;
}

/* The root broadcasts three times before anyone else calls: every other
 * rank gets the data (and forwards it) anyway; the later calls find it
 * there. Eager and rendezvous sizes; some ranks call before the data. */
static void t_bypass(void)
{
    static const size_t sizes[] = {100, 5000};
    int good = 1, runs = 0;
    uint64_t bypassed = 0;
    for (int k = 0; k < NNS && good; k++) {
        int n = ns[k];
        for (int z = 0; z < 2 && good; z++) {
            world w;
            if (world_new(&w, n, bypass_cfg, NULL) != 0) {
                good = 0;
                break;
            }
            size_t len = sizes[z];
            int root = n / 2;
            enum { B = 3 };
            uint8_t *buf[MAXN][B];
            quay_req *q[MAXN][B];
            memset(q, 0, sizeof q);
            for (int r = 0; r < n; r++)
                for (int b = 0; b < B; b++) {
                    buf[r][b] = malloc(len);
                    for (size_t i = 0; i < len; i++)
                        buf[r][b][i] = r == root ? (uint8_t)(i + 13 * (size_t)b) : 0xEE;
                }
            /* Rank (root + 1) calls at once; the rest only after the run. */
            int early = (root + 1) % n;
            for (int b = 0; b < B; b++) {
                good &= quay_ibcast(w.e[root], w.c[root], buf[root][b], len, root, &q[root][b]) == 0;
                if (early != root)
                    good &= quay_ibcast(w.e[early], w.c[early], buf[early][b], len, root,
                                        &q[early][b]) == 0;
            }
            good &= sw_run(&w) == NICSIM_RUN_IDLE;
            for (int r = 0; r < n; r++) {
                quay_stats st;
                quay_engine_stats(w.e[r], &st);
                if (r != root && r != early && st.coll_bypassed != B) {
                    note("n %d len %zu: rank %d bypassed %llu of %d", n, len, r,
                         (unsigned long long)st.coll_bypassed, B);
                    good = 0;
                }
                bypassed += st.coll_bypassed;
            }
            for (int r = 0; r < n; r++)
                if (r != root && r != early)
                    for (int b = 0; b < B; b++)
                        good &= quay_ibcast(w.e[r], w.c[r], buf[r][b], len, root, &q[r][b]) == 0;
            good &= sw_run(&w) == NICSIM_RUN_IDLE;
            for (int r = 0; r < n; r++)
                for (int b = 0; b < B; b++) {
                    quay_status st;
                    good &= q[r][b] != NULL && quay_req_test(q[r][b], &st) && st.error == 0;
                    for (size_t i = 0; i < len; i++)
                        good &= buf[r][b][i] == (uint8_t)(i + 13 * (size_t)b);
                    if (q[r][b] != NULL)
                        quay_req_free(w.e[r], q[r][b]);
                    free(buf[r][b]);
                }
            for (int r = 0; r < n; r++) {
                quay_stats st;
                quay_engine_stats(w.e[r], &st);
                good &= st.reqs_in_use == 0 && st.umsgs_in_use == 0;
            }
            nicsim_stats ss;
            nicsim_get_stats(w.sim, &ss);
            if (n >= 4 && ss.notifies == 0) {
                note("n %d: no NOTIFY for forwarding ranks", n);
                good = 0;
            }
            sw_free(&w);
            runs++;
        }
    }
    ok_msg(good, "%d runs (%s, 100 B eager and 5000 B rendezvous): %llu broadcasts "
                 "forwarded before their call, every buffer right", runs, ns_desc(),
           (unsigned long long)bypassed);
}

/* ---- multi-send ------------------------------------------------------------------- */

static void multi_cfg(quay_config *c, void *arg)
{
    c->transport_caps |= QUAY_CAP_MULTI_SEND;
    c->coll_bcast = *(const uint32_t *)arg;
}

/* With the transport's multi-send, a tree node's copies to its children
 * leave as one SEND_MULTI; results are unchanged. */
static void t_multi(void)
{
    int good = 1;
    uint64_t multis = 0;
    for (uint32_t alg = 1; alg <= 2; alg++)
        for (int k = 0; k < NNS && good; k++) {
            int n = ns[k];
            world w;
            if (world_new(&w, n, multi_cfg, &alg) != 0) {
                good = 0;
                break;
            }
            uint8_t buf[MAXN][200];
            quay_req *q[MAXN] = {0};
            for (int r = 0; r < n; r++)
                for (int i = 0; i < 200; i++)
                    buf[r][i] = r == 0 ? (uint8_t)(i * 3) : 0;
            for (int r = 0; r < n; r++)
                good &= quay_ibcast(w.e[r], w.c[r], buf[r], 200, 0, &q[r]) == 0;
            good &= sw_run(&w) == NICSIM_RUN_IDLE;
            good &= all_good(&w, q, n);
            for (int r = 0; r < n; r++)
                good &= memcmp(buf[r], buf[0], 200) == 0;
            nicsim_stats ss;
            nicsim_get_stats(w.sim, &ss);
            multis += ss.multi_sends;
            if (n >= 3 && ss.multi_sends == 0) {
                note("alg %u n %d: no multi-send", alg, n);
                good = 0;
            }
            sw_free(&w);
        }
    ok_msg(good, "binomial and optimal-tree bcast with multi-send: %llu SEND_MULTI actions, "
                 "results right", (unsigned long long)multis);
}

/* ---- errors and bounds ----------------------------------------------------------- */

static void limit_colls(quay_config *c, void *arg)
{
    (void)arg;
    c->coll_max = 2;
}

static void t_errors(void)
{
    world w;
    if (world_new(&w, 3, limit_colls, NULL) != 0) {
        ok(0);
        return;
    }
    quay_engine *e = w.e[0];
    quay_comm *c = w.c[0];
    quay_req *q = (quay_req *)1, *q2, *q3;
    int32_t x = 1, y;
    quay_op sum = {QUAY_OP_SUM, 1, NULL, NULL};
    is_int(quay_ibarrier(NULL, c, &q), QUAY_EINVAL);
    is_int(quay_ibarrier(e, NULL, &q), QUAY_EINVAL);
    ok(q == NULL);
    is_int(quay_ibarrier(e, c, NULL), QUAY_EINVAL);
    is_int(quay_ibarrier(e, w.c[1], &q), QUAY_EINVAL); /* another engine's */
    is_int(quay_ibcast(e, c, NULL, 4, 0, &q), QUAY_EINVAL);
    is_int(quay_ibcast(e, c, &x, 4, 3, &q), QUAY_ERANK);
    is_int(quay_ibcast(e, c, &x, 4, -1, &q), QUAY_ERANK);
    is_int(quay_ireduce(e, c, &x, &y, 1, QUAY_INT32, &sum, 5, &q), QUAY_ERANK);
    is_int(quay_ireduce(e, c, &x, &y, 1, QUAY_INT32, NULL, 0, &q), QUAY_EINVAL);
    is_int(quay_ireduce(e, c, &x, &y, 1, QUAY_FLOAT + 100, &sum, 0, &q), QUAY_EINVAL);
    is_int(quay_iallreduce(e, c, &x, &y, 1, QUAY_DOUBLE,
                           &(quay_op){QUAY_OP_BAND, 1, NULL, NULL}, &q), QUAY_EINVAL);
    is_int(quay_iallreduce(e, c, &x, &y, 1, QUAY_INT32,
                           &(quay_op){QUAY_OP_USER, 1, NULL, NULL}, &q), QUAY_EINVAL);
    is_int(quay_iallreduce(e, c, NULL, &y, 1, QUAY_INT32, &sum, &q), QUAY_EINVAL);
    is_int(quay_iallreduce(e, c, &x, NULL, 1, QUAY_INT32, &sum, &q), QUAY_EINVAL);
    /* In place only where the result lands. */
    is_int(quay_ireduce(w.e[1], w.c[1], QUAY_IN_PLACE, &y, 1, QUAY_INT32, &sum, 0, &q),
           QUAY_EINVAL);
    quay_stats st;
    quay_engine_stats(e, &st);
    is_int((int)st.coll_started, 0); /* nothing above started anything */
    /* Bounds: coll_max schedules, then EAGAIN; a collective cannot be
     * cancelled; its communicator cannot be freed under it. */
    is_int(quay_ibarrier(e, c, &q), 0);
    is_int(quay_ibarrier(e, c, &q2), 0);
    is_int(quay_ibarrier(e, c, &q3), QUAY_EAGAIN);
    is_int(quay_cancel(e, q), QUAY_EINVAL);
    is_int(quay_comm_free(e, c), QUAY_EBUSY);
    is_int(q->state, QUAY_RS_COLL);
    is_str(quay_state_name(QUAY_RS_COLL), "COLL");
    quay_req *o[MAXN][2];
    for (int r = 1; r < 3; r++) {
        is_int(quay_ibarrier(w.e[r], w.c[r], &o[r][0]), 0);
        is_int(quay_ibarrier(w.e[r], w.c[r], &o[r][1]), 0);
    }
    is_int(sw_run(&w), NICSIM_RUN_IDLE);
    ok(quay_req_test(q, NULL) && quay_req_test(q2, NULL));
    quay_req_free(e, q);
    quay_req_free(e, q2);
    for (int r = 1; r < 3; r++) {
        quay_req_free(w.e[r], o[r][0]);
        quay_req_free(w.e[r], o[r][1]);
    }
    /* Free before completion: released when done. */
    is_int(quay_ibarrier(e, c, &q), 0);
    is_int(quay_req_free(e, q), 0);
    for (int r = 1; r < 3; r++)
        is_int(quay_ibarrier(w.e[r], w.c[r], &o[r][0]), 0);
    is_int(sw_run(&w), NICSIM_RUN_IDLE);
    for (int r = 1; r < 3; r++)
        quay_req_free(w.e[r], o[r][0]);
    quay_engine_stats(e, &st);
    is_int((int)st.reqs_in_use, 0);
    is_int((int)st.coll_started, 3);
    /* Context ids with the collective bit are not the user's. */
    quay_comm *bad;
    is_int(quay_comm_create(e, 0x80000005u, 3, NULL, &bad), QUAY_ECOMM);
    for (int r = 0; r < 3; r++)
        is_int(quay_comm_free(w.e[r], w.c[r]), 0);
    quay_engine_stats(e, &st);
    is_int((int)st.comms_in_use, 0);
    sw_free(&w);
    /* An engine freed with a collective running leaks nothing (ASan). */
    if (world_new(&w, 2, NULL, NULL) == 0) {
        is_int(quay_ibarrier(w.e[0], w.c[0], &q), 0);
        sw_free(&w);
    }
}

/* A NIC agent's reports: more offloaded collectives finished before any
 * is pulled than the report ring first holds (it grows as schedules
 * start), every one reported once, in the order they ended, up to
 * coll_max at once; then the ring is reused. Single-member barriers end
 * at the post. */
static void t_agent_reports(void)
{
    quay_config cfg;
    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    cfg.rank = 0;
    cfg.nranks = 2;
    cfg.coll_max = 40;
    quay_engine *agent;
    if (!is_int(quay_engine_new(&cfg, &agent), 0))
        return;
    int32_t me = 0;
    quay_offload d;
    memset(&d, 0, sizeof d);
    d.kind = QUAY_OFF_BARRIER;
    d.ctx = 7;
    d.size = 1;
    d.world = &me;
    int good = 1;
    /* Reports pulled part-way, so the ring has wrapped when it grows: 6
     * posted, 4 pulled, 10 more posted, all pulled: 0..15 in order. */
    uint64_t next = 0, want = 0;
    quay_action a;
    for (int phase = 0; phase < 3; phase++) {
        int post = phase == 0 ? 6 : phase == 1 ? 10 : 0, pull = phase == 0 ? 4 : 99;
        for (int k = 0; k < post; k++) {
            d.cookie = 500 + next++;
            good &= quay_agent_post(agent, &d) == 0;
        }
        for (int k = 0; k < pull && quay_next_action(agent, &a) == 1;)
            if (a.kind == QUAY_ACT_OFFLOAD_DONE) {
                good &= a.offload.cookie == 500 + want++;
                k++;
            }
    }
    ok_msg(good && want == 16, "wrapped ring grown: %d reports in order", (int)want);
    for (int round = 0; round < 2; round++) {
        int posted = 0;
        for (uint64_t k = 0; k < 50; k++) {
            d.cookie = 1000 * (uint64_t)round + k;
            int rc = quay_agent_post(agent, &d);
            if (rc == QUAY_EAGAIN)
                break; /* coll_max reports pending */
            good &= rc == 0;
            posted++;
        }
        good &= posted == (int)cfg.coll_max;
        int n = 0;
        while (quay_next_action(agent, &a) == 1) {
            if (a.kind != QUAY_ACT_OFFLOAD_DONE)
                continue;
            good &= a.offload.cookie == 1000 * (uint64_t)round + (uint64_t)n &&
                    a.offload.status == 0;
            n++;
        }
        ok_msg(good && n == posted, "round %d: %d reports of %d, in order", round, n, posted);
    }
    quay_engine_free(agent);
}

int main(void)
{
    subtest("barrier", t_barrier);
    subtest("bcast", t_bcast);
    subtest("reduce", t_reduce);
    subtest("allreduce", t_allreduce);
    subtest("reused schedules", t_reuse);
    subtest("large messages", t_large);
    subtest("early messages, concurrency, communicators", t_concurrent);
    subtest("application bypass", t_bypass);
    subtest("multi-send", t_multi);
    subtest("arguments and bounds", t_errors);
    subtest("NIC agent: reports beyond the first ring, in order", t_agent_reports);
    return done_testing();
}
