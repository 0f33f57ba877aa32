/*
 * test_coll_ops.c — reduction kernels (src/collectives/ops.c).
 *
 *   - element sizes and the validity table (every kind x type, in range
 *     and out of it) through quay_op_check and quay_reduce_local;
 *   - every valid (type, op): random inputs with a fixed seed at counts 0,
 *     1, 7, 64, 1000 and the full cross product of edge values, against
 *     an oracle written here from the rules in ops.c's header (integers in
 *     wide arithmetic and truncated; floats in the same type, compared
 *     bitwise); bytes past the range stay untouched;
 *   - hand-computed answers for wrap-around, logical results and the
 *     documented NaN / signed-zero behaviour of MIN and MAX;
 *   - a non-commutative user op (digit concatenation) shows the order
 *     inout = in op inout and that fn gets count, dt and ctx once;
 *   - buffers offset by one byte give the same results;
 *   - op_commutative.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "collectives/ops.h"
#include "harness.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
#define MAXN 1000
#define GUARD 16 /* bytes past the range that must stay untouched */

/* ---- helpers ------------------------------------------------------------ */

typedef struct rng {
    uint64_t s;
} rng;

/* Deterministic xorshift64*: same seed, same run. */
static uint64_t rng_next(rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545f4914f6cdd1dull;
}

typedef struct tinfo {
    quay_dtype dt;
    const char *name;
    size_t size;
    int is_signed, is_float;
} tinfo;

static const tinfo types[] = {
    {QUAY_INT8, "int8", 1, 1, 0},    {QUAY_UINT8, "uint8", 1, 0, 0},
    {QUAY_INT16, "int16", 2, 1, 0},  {QUAY_UINT16, "uint16", 2, 0, 0},
    {QUAY_INT32, "int32", 4, 1, 0},  {QUAY_UINT32, "uint32", 4, 0, 0},
    {QUAY_INT64, "int64", 8, 1, 0},  {QUAY_UINT64, "uint64", 8, 0, 0},
    {QUAY_FLOAT, "float", 4, 1, 1},  {QUAY_DOUBLE, "double", 8, 1, 1},
};

/* Independent statement of MPI's rule: arithmetic and MIN/MAX on every
 * type, bitwise and logical ops on integers only. */
static int pair_valid(int kind, const tinfo *t)
{
    return (kind >= QUAY_OP_SUM && kind <= QUAY_OP_MAX) ||
           (kind >= QUAY_OP_BAND && kind <= QUAY_OP_LXOR && !t->is_float);
}

static uint64_t get_bits(size_t size, const unsigned char *p)
{
    uint8_t v8;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    switch (size) {
    case 1: memcpy(&v8, p, 1); return v8;
    case 2: memcpy(&v16, p, 2); return v16;
    case 4: memcpy(&v32, p, 4); return v32;
    default: memcpy(&v64, p, 8); return v64;
    }
}

static void put_bits(size_t size, unsigned char *p, uint64_t bits)
{
    uint8_t v8 = (uint8_t)bits;
    uint16_t v16 = (uint16_t)bits;
    uint32_t v32 = (uint32_t)bits;
    switch (size) {
    case 1: memcpy(p, &v8, 1); break;
    case 2: memcpy(p, &v16, 2); break;
    case 4: memcpy(p, &v32, 4); break;
    default: memcpy(p, &bits, 8); break;
    }
}

/* All ones in the element's width. */
static uint64_t mask_of(const tinfo *t)
{
    return t->size == 8 ? UINT64_MAX : (1ull << (8 * t->size)) - 1;
}

/* Two's-complement value of a w-bit pattern, w = 8 * size. */
static int64_t signed_value(size_t size, uint64_t bits)
{
    if (size == 8) {
        int64_t v;
        memcpy(&v, &bits, 8);
        return v;
    }
    uint64_t sign = 1ull << (8 * size - 1);
    return (int64_t)(bits & (sign - 1)) - (int64_t)(bits & sign);
}

/* Oracle for integers: a = in, b = inout (bit patterns). Narrow types
 * compute in 64 bits where nothing overflows, then truncate; 64-bit types
 * use uint64 arithmetic, which is the definition of wrapping. */
static uint64_t oracle_int(int kind, const tinfo *t, uint64_t a, uint64_t b)
{
    uint64_t mask = mask_of(t);
    int64_t sa = signed_value(t->size, a), sb = signed_value(t->size, b);
    int wide = t->size < 8 && t->is_signed;
    uint64_t r = 0;
    switch (kind) {
    case QUAY_OP_SUM: r = wide ? (uint64_t)(sa + sb) : a + b; break;
    case QUAY_OP_PROD: r = wide ? (uint64_t)(sa * sb) : a * b; break;
    case QUAY_OP_MIN: r = (t->is_signed ? sa < sb : a < b) ? a : b; break;
    case QUAY_OP_MAX: r = (t->is_signed ? sa > sb : a > b) ? a : b; break;
    case QUAY_OP_BAND: r = a & b; break;
    case QUAY_OP_BOR: r = a | b; break;
    case QUAY_OP_BXOR: r = a ^ b; break;
    case QUAY_OP_LAND: r = a != 0 && b != 0; break;
    case QUAY_OP_LOR: r = a != 0 || b != 0; break;
    case QUAY_OP_LXOR: r = (a != 0) ^ (b != 0); break;
    }
    return r & mask;
}

/* A float element widened to double (exact), and a double rounded to the
 * element type, as bit patterns. */
static double to_double(const tinfo *t, uint64_t bits)
{
    unsigned char buf[8];
    put_bits(t->size, buf, bits);
    float f;
    double d;
    if (t->size == 4)
        return memcpy(&f, buf, 4), (double)f;
    return memcpy(&d, buf, 8), d;
}

static uint64_t float_bits(const tinfo *t, double v)
{
    unsigned char buf[8];
    float f = (float)v;
    if (t->size == 4)
        memcpy(buf, &f, 4);
    else
        memcpy(buf, &v, 8);
    return get_bits(t->size, buf);
}

/* Oracle for floats: float SUM/PROD are computed in double and rounded
 * once, which gives the float result bit for bit (double has more than
 * 2 * 24 + 2 bits). MIN/MAX take `in` only when the comparison holds,
 * otherwise keep inout (NaN, -0 against +0). */
static uint64_t oracle_float(int kind, const tinfo *t, uint64_t abits, uint64_t bbits)
{
    double a = to_double(t, abits), b = to_double(t, bbits), r = 0;
    switch (kind) {
    case QUAY_OP_SUM: r = a + b; break;
    case QUAY_OP_PROD: r = a * b; break;
    case QUAY_OP_MIN: return a < b ? abits : bbits;
    case QUAY_OP_MAX: return a > b ? abits : bbits;
    }
    return float_bits(t, r);
}

static uint64_t oracle(int kind, const tinfo *t, uint64_t a, uint64_t b)
{
    return t->is_float ? oracle_float(kind, t, a, b) : oracle_int(kind, t, a, b);
}

/* Edge values of t as bit patterns; returns how many (at most 16). Floats
 * carry one NaN only: two NaNs with different payloads would make the
 * result depend on operand order inside the FPU, not on ops.c. */
static size_t edge_values(const tinfo *t, uint64_t *v)
{
    size_t n = 0;
    if (t->is_float) {
        const double big = t->size == 4 ? FLT_MAX : DBL_MAX;
        const double tiny = t->size == 4 ? FLT_TRUE_MIN : DBL_TRUE_MIN;
        const double vals[] = {0.0,  -0.0, 1.0,      -1.0, 0.5,       3.0,       big,
                               -big, 1e30, -1e30,    tiny, -tiny,     INFINITY, -INFINITY};
        for (size_t i = 0; i < COUNT_OF(vals); i++)
            v[n++] = float_bits(t, vals[i]);
        v[n++] = float_bits(t, NAN);
        return n;
    }
    uint64_t mask = mask_of(t);
    uint64_t smin = 1ull << (8 * t->size - 1); /* INT_MIN's bits */
    const uint64_t vals[] = {0, 1, 2, mask /* -1 */, mask - 1, smin, smin + 1,
                             smin - 1 /* INT_MAX */, smin - 2, 0x5555555555555555ull & mask,
                             0xaaaaaaaaaaaaaaaaull & mask, 3};
    for (size_t i = 0; i < COUNT_OF(vals); i++)
        v[n++] = vals[i];
    return n;
}

/* A random element: an edge value a quarter of the time; otherwise random
 * bits for integers and a random finite value for floats. */
static uint64_t random_value(rng *r, const tinfo *t)
{
    uint64_t edges[16];
    size_t ne = edge_values(t, edges);
    uint64_t x = rng_next(r);
    if (x % 4 == 0)
        return edges[(x >> 8) % ne];
    if (!t->is_float)
        return rng_next(r) & mask_of(t);
    int64_t mant = (int64_t)(rng_next(r) % 2000001) - 1000000;
    int e = (int)(rng_next(r) % 81) - 40;
    double v = (double)mant;
    for (; e > 0; e--) /* exact scaling by 2^e without libm */
        v *= 2.0;
    for (; e < 0; e++)
        v *= 0.5;
    return float_bits(t, v);
}

/* ---- tests ------------------------------------------------------------- */

static void test_sizes(void)
{
    static const size_t want[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
    for (size_t i = 0; i < COUNT_OF(types); i++) {
        is_size(quay_dtype_size(types[i].dt), want[i]);
        is_size(op_dtype_size(types[i].dt), want[i]);
    }
    is_size(quay_dtype_size((quay_dtype)0), 0);
    is_size(quay_dtype_size(QUAY_DTYPE_COUNT_), 0);
    is_size(quay_dtype_size((quay_dtype)-1), 0);
}

static void user_nop(const void *in, void *inout, size_t count, quay_dtype dt, void *ctx)
{
    (void)in, (void)inout, (void)count, (void)dt, (void)ctx;
}

static void test_validity(void)
{
    int bad = 0, good = 0;
    for (int k = -1; k <= QUAY_OP_COUNT_ + 1; k++) {
        for (int d = -1; d <= QUAY_DTYPE_COUNT_ + 1; d++) {
            for (int with_fn = 0; with_fn < 2; with_fn++) {
                const tinfo *t = d >= 1 && d < QUAY_DTYPE_COUNT_ ? &types[d - 1] : NULL;
                int valid = t != NULL && (k == QUAY_OP_USER ? with_fn : pair_valid(k, t));
                quay_op op = {(quay_op_kind)k, 0, with_fn ? user_nop : NULL, NULL};
                int want = valid ? QUAY_OK : QUAY_EINVAL;
                unsigned char in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, io[8] = {9}, io0[8] = {9};
                int c1 = quay_op_check(&op, (quay_dtype)d);
                int c2 = op_check(&op, (quay_dtype)d);
                int c3 = quay_reduce_local(in, io, 1, (quay_dtype)d, &op);
                if (c1 != want || c2 != want || c3 != want ||
                    (!valid && memcmp(io, io0, 8) != 0)) {
                    bad++;
                    note("kind %d dt %d fn %d: %d %d %d, want %d", k, d, with_fn, c1, c2,
                         c3, want);
                }
                good += valid;
            }
        }
    }
    is_int(bad, 0);
    is_int(good, 2 * (8 * 10 + 2 * 4) + 10); /* predefined twice, USER once */

    quay_op sum = {QUAY_OP_SUM, 0, NULL, NULL};
    int32_t x = 1, y = 2;
    is_int(quay_op_check(NULL, QUAY_INT32), QUAY_EINVAL);
    is_int(quay_reduce_local(&x, &y, 1, QUAY_INT32, NULL), QUAY_EINVAL);
    is_int(quay_reduce_local(NULL, &y, 1, QUAY_INT32, &sum), QUAY_EINVAL);
    is_int(quay_reduce_local(&x, NULL, 1, QUAY_INT32, &sum), QUAY_EINVAL);
    is_int(quay_reduce_local(QUAY_IN_PLACE, &y, 1, QUAY_INT32, &sum), QUAY_EINVAL);
    is_int(quay_reduce_local(&x, &y, SIZE_MAX / 2, QUAY_INT32, &sum), QUAY_EINVAL);
    is_int(quay_reduce_local(NULL, NULL, 0, QUAY_INT32, &sum), QUAY_OK);
    is_int(y, 2);
    is_int(quay_reduce_local(&x, &y, 1, QUAY_INT32, &sum), QUAY_OK);
    is_int(y, 3);
    is_int(quay_reduce_local(&y, &y, 1, QUAY_INT32, &sum), QUAY_OK); /* in == inout */
    is_int(y, 6);
}

/* Fill in/io with n elements of t (io gets `guard` bytes of 0xA5 after
 * them), run op_apply and compare with the oracle. 1 if all agree. */
static int check_pair(int kind, const tinfo *t, const uint64_t *a, const uint64_t *b,
                      size_t n)
{
    static unsigned char in[MAXN * 8], io[MAXN * 8 + GUARD];
    size_t sz = t->size;
    for (size_t i = 0; i < n; i++) {
        put_bits(sz, in + i * sz, a[i]);
        put_bits(sz, io + i * sz, b[i]);
    }
    memset(io + n * sz, 0xA5, GUARD);
    quay_op op = {(quay_op_kind)kind, 0, NULL, NULL};
    op_apply(&op, t->dt, in, io, n);
    for (size_t i = 0; i < n; i++) {
        uint64_t got = get_bits(sz, io + i * sz), want = oracle(kind, t, a[i], b[i]);
        if (got != want) {
            note("%s op %d elem %zu: in %#llx inout %#llx got %#llx want %#llx", t->name,
                 kind, i, (unsigned long long)a[i], (unsigned long long)b[i],
                 (unsigned long long)got, (unsigned long long)want);
            return 0;
        }
    }
    for (size_t i = 0; i < GUARD; i++)
        if (io[n * sz + i] != 0xA5)
            return 0;
    return 1;
}

static void test_random(void)
{
    static const size_t counts[] = {0, 1, 7, 64, MAXN};
    static uint64_t a[MAXN], b[MAXN];
    rng r = {0x9e3779b97f4a7c15ull};
    for (size_t ti = 0; ti < COUNT_OF(types); ti++) {
        const tinfo *t = &types[ti];
        int fails = 0, pairs = 0;
        for (int k = QUAY_OP_SUM; k <= QUAY_OP_LXOR; k++) {
            if (!pair_valid(k, t))
                continue;
            for (size_t c = 0; c < COUNT_OF(counts); c++) {
                for (size_t i = 0; i < counts[c]; i++) {
                    a[i] = random_value(&r, t);
                    b[i] = random_value(&r, t);
                }
                fails += !check_pair(k, t, a, b, counts[c]);
                pairs++;
            }
        }
        ok_msg(fails == 0, "%s: %d (op, count) runs agree with the oracle", t->name, pairs);
    }
}

static void test_edges(void)
{
    for (size_t ti = 0; ti < COUNT_OF(types); ti++) {
        const tinfo *t = &types[ti];
        uint64_t e[16], a[256], b[256];
        size_t ne = edge_values(t, e), n = 0;
        for (size_t i = 0; i < ne; i++)
            for (size_t j = 0; j < ne; j++, n++)
                a[n] = e[i], b[n] = e[j];
        int fails = 0;
        for (int k = QUAY_OP_SUM; k <= QUAY_OP_LXOR; k++)
            if (pair_valid(k, t))
                fails += !check_pair(k, t, a, b, n);
        ok_msg(fails == 0, "%s: %zu x %zu edge pairs, every op", t->name, ne, ne);
    }
}

/* Answers computed by hand, so the oracle's own reading is checked too. */
static void test_known(void)
{
    quay_op sum = {QUAY_OP_SUM, 0, NULL, NULL}, prod = {QUAY_OP_PROD, 0, NULL, NULL};
    quay_op mn = {QUAY_OP_MIN, 0, NULL, NULL}, mx = {QUAY_OP_MAX, 0, NULL, NULL};
    quay_op land = {QUAY_OP_LAND, 0, NULL, NULL}, lxor = {QUAY_OP_LXOR, 0, NULL, NULL};

    int8_t i8a[3] = {127, -128, -1}, i8b[3] = {1, -1, -128};
    op_apply(&sum, QUAY_INT8, i8a, i8b, 3);
    ok(i8b[0] == -128 && i8b[1] == 127 && i8b[2] == 127);
    uint16_t u16a = 65535, u16b = 65535;
    op_apply(&prod, QUAY_UINT16, &u16a, &u16b, 1);
    is_int(u16b, 1);
    int32_t i32a[2] = {INT32_MIN, 65536}, i32b[2] = {-1, 65536};
    op_apply(&prod, QUAY_INT32, i32a, i32b, 2);
    ok(i32b[0] == INT32_MIN && i32b[1] == 0);
    int64_t i64a[2] = {INT64_MAX, -5}, i64b[2] = {1, 3};
    op_apply(&sum, QUAY_INT64, i64a, i64b, 2);
    ok(i64b[0] == INT64_MIN && i64b[1] == -2);
    int16_t la[4] = {-1, 0, 2, 0}, lb[4] = {256, 7, 0, 0}, lx[4];
    memcpy(lx, lb, sizeof lb);
    op_apply(&land, QUAY_INT16, la, lb, 4);
    ok(lb[0] == 1 && lb[1] == 0 && lb[2] == 0 && lb[3] == 0);
    op_apply(&lxor, QUAY_INT16, la, lx, 4);
    ok(lx[0] == 0 && lx[1] == 1 && lx[2] == 1 && lx[3] == 0);
    int8_t ma[2] = {-128, 5}, mb[2] = {127, -6};
    op_apply(&mn, QUAY_INT8, ma, mb, 2);
    ok(mb[0] == -128 && mb[1] == -6);
    uint32_t ua = 0x80000000u, ub = 1;
    op_apply(&mx, QUAY_UINT32, &ua, &ub, 1);
    ok(ub == 0x80000000u);

    /* Documented float MIN/MAX: the comparison decides; else inout. */
    double da[4] = {NAN, 1.0, -0.0, 0.0}, db[4] = {1.0, NAN, 0.0, -0.0};
    op_apply(&mn, QUAY_DOUBLE, da, db, 4);
    ok(db[0] == 1.0 && isnan(db[1]) && !signbit(db[2]) && signbit(db[3]));
    float fa[2] = {2.0f, NAN}, fb[2] = {-INFINITY, 3.0f};
    op_apply(&mx, QUAY_FLOAT, fa, fb, 2);
    ok(fa[0] == 2.0f && fb[0] == 2.0f && fb[1] == 3.0f);
}

/* Concatenation of decimal digit strings (digits 1-9, so no leading
 * zeros): associative, not commutative. ctx counts the calls. */
static void user_concat(const void *in, void *inout, size_t count, quay_dtype dt, void *ctx)
{
    const int64_t *a = in;
    int64_t *b = inout;
    ++*(int *)ctx;
    if (dt != QUAY_INT64)
        return;
    for (size_t i = 0; i < count; i++) {
        int64_t scale = 1;
        for (int64_t v = b[i]; v > 0; v /= 10)
            scale *= 10;
        b[i] = a[i] * scale + b[i];
    }
}

static void test_user(void)
{
    int calls = 0;
    quay_op op = {QUAY_OP_USER, 0, user_concat, &calls};
    int64_t in[3] = {12, 7, 999}, io[3] = {345, 1, 1};
    is_int(quay_op_check(&op, QUAY_INT64), QUAY_OK);
    is_int(quay_reduce_local(in, io, 3, QUAY_INT64, &op), QUAY_OK);
    is_int(calls, 1);
    ok(io[0] == 12345 && io[1] == 71 && io[2] == 9991); /* in first, then inout */

    /* x0 op x1 op x2 op x3 = 1234 when every step keeps the order,
     * whichever way it is bracketed. */
    int64_t x[4] = {1, 2, 3, 4};
    op_apply(&op, QUAY_INT64, &x[2], &x[3], 1); /* x3 = x2 op x3 */
    op_apply(&op, QUAY_INT64, &x[0], &x[1], 1); /* x1 = x0 op x1 */
    op_apply(&op, QUAY_INT64, &x[1], &x[3], 1); /* x3 = (x0 op x1) op (x2 op x3) */
    is_int(x[3], 1234);
    is_int(calls, 4);
    op_apply(&op, QUAY_INT64, NULL, NULL, 0);
    is_int(calls, 4); /* not called for an empty range */
    is_int(op_commutative(&op), 0);
    op.commutative = 7;
    is_int(op_commutative(&op), 1);
}

static void test_commutative(void)
{
    for (int k = QUAY_OP_SUM; k <= QUAY_OP_LXOR; k++) {
        quay_op op = {(quay_op_kind)k, 0, NULL, NULL};
        is_int(op_commutative(&op), 1);
    }
}

/* Every valid pair on buffers at base + 1 (base 16-byte aligned) agrees
 * with the same data at base. */
static void test_unaligned(void)
{
    static _Alignas(16) unsigned char in0[MAXN * 8 + 16], io0[MAXN * 8 + 16];
    static _Alignas(16) unsigned char in1[MAXN * 8 + 16], io1[MAXN * 8 + 16];
    rng r = {12345};
    int fails = 0;
    for (size_t ti = 0; ti < COUNT_OF(types); ti++) {
        const tinfo *t = &types[ti];
        for (int k = QUAY_OP_SUM; k <= QUAY_OP_LXOR; k++) {
            if (!pair_valid(k, t))
                continue;
            for (size_t i = 0; i < MAXN; i++) {
                put_bits(t->size, in0 + i * t->size, random_value(&r, t));
                put_bits(t->size, io0 + i * t->size, random_value(&r, t));
            }
            memcpy(in1 + 1, in0, MAXN * t->size);
            memcpy(io1 + 1, io0, MAXN * t->size);
            quay_op op = {(quay_op_kind)k, 0, NULL, NULL};
            op_apply(&op, t->dt, in0, io0, MAXN);
            is_int(quay_reduce_local(in1 + 1, io1 + 1, MAXN, t->dt, &op), QUAY_OK);
            fails += memcmp(io0, io1 + 1, MAXN * t->size) != 0;
        }
    }
    is_int(fails, 0);
}

int main(void)
{
    subtest("sizes", test_sizes);
    subtest("validity", test_validity);
    subtest("random", test_random);
    subtest("edges", test_edges);
    subtest("known", test_known);
    subtest("user", test_user);
    subtest("commutative", test_commutative);
    subtest("unaligned", test_unaligned);
    return done_testing();
}
