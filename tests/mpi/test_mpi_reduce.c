/*
 * test_mpi_reduce.c — the reductions of an MPI library against a
 * sequentially computed reference: MPI_Reduce (every root), MPI_Allreduce,
 * MPI_Ireduce, MPI_Iallreduce (in place and not) and MPI_Reduce_local,
 * for every (op, type) pair MPI-3.1 §5.9.2 defines, MINLOC / MAXLOC on
 * the six pair types, user ops (commutative and not, on carriers of 8
 * and 16 bytes), counts 0, 1, 7, 1000 and 100000; then the error classes
 * of invalid calls under MPI_ERRORS_RETURN.
 *
 * Standard MPI only (any number of ranks). Every rank can generate every
 * rank's operand (a hash of seed, rank and index), so each computes the
 * reference x0 op x1 op ... op x(n-1) itself. Operands are chosen so that
 * floating-point results are exact in any association (small integers
 * for sums, powers of two and small Gaussian integers for products).
 *
 * Prints "test_mpi_reduce: OK" at rank 0 and exits 0, or prints what
 * failed where and calls MPI_Abort(MPI_COMM_WORLD, 1).
 */
#include <mpi.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, nranks;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
static void fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "test_mpi_reduce: rank %d: FAIL: ", me);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* (MPI_Abort does not return) */
}

/* An MPI call that must succeed. */
#define OK(call)                                                                           \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        if (rc_ != MPI_SUCCESS)                                                            \
            fail("%s:%d: %s returned %d", __FILE__, __LINE__, #call, rc_);                 \
    } while (0)

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
    if (p == NULL)
        fail("out of memory");
    return p;
}

/* ---- types ------------------------------------------------------------------ */

enum kind { K_SINT, K_UINT, K_BOOL, K_BYTE, K_FLOAT, K_COMPLEX, K_PAIR };
/* Value representation of floating, complex and pair-value elements. */
enum fsel { F_NONE, F_FLOAT, F_DOUBLE, F_LDOUBLE, F_LONG, F_INT, F_SHORT };

typedef struct ttype {
    MPI_Datatype dt;
    const char *name;
    int kind;
    size_t size;
    int fsel;    /* K_FLOAT, K_COMPLEX, K_PAIR: the value's C type */
    size_t ioff; /* K_PAIR: offset of the int index */
    int multi;   /* a multi-language type (AINT, OFFSET, COUNT): no logical ops */
} ttype;

struct p_float { float v; int i; };
struct p_double { double v; int i; };
struct p_long { long v; int i; };
struct p_int { int v; int i; };
struct p_short { short v; int i; };
struct p_ldouble { long double v; int i; };

#define INTT(dt, T, sgn) {dt, #dt, (sgn) ? K_SINT : K_UINT, sizeof(T), F_NONE, 0, 0}
#define MULTI(dt, T) {dt, #dt, K_SINT, sizeof(T), F_NONE, 0, 1}
#define PAIR(dt, S, f) {dt, #dt, K_PAIR, sizeof(struct S), f, offsetof(struct S, i), 0}

static const ttype types[] = {
    INTT(MPI_SIGNED_CHAR, signed char, 1),
    INTT(MPI_UNSIGNED_CHAR, unsigned char, 0),
    INTT(MPI_SHORT, short, 1),
    INTT(MPI_UNSIGNED_SHORT, unsigned short, 0),
    INTT(MPI_INT, int, 1),
    INTT(MPI_UNSIGNED, unsigned, 0),
    INTT(MPI_LONG, long, 1),
    INTT(MPI_UNSIGNED_LONG, unsigned long, 0),
    INTT(MPI_LONG_LONG, long long, 1),
    INTT(MPI_UNSIGNED_LONG_LONG, unsigned long long, 0),
    INTT(MPI_INT8_T, int8_t, 1),
    INTT(MPI_INT16_T, int16_t, 1),
    INTT(MPI_INT32_T, int32_t, 1),
    INTT(MPI_INT64_T, int64_t, 1),
    INTT(MPI_UINT8_T, uint8_t, 0),
    INTT(MPI_UINT16_T, uint16_t, 0),
    INTT(MPI_UINT32_T, uint32_t, 0),
    INTT(MPI_UINT64_T, uint64_t, 0),
    MULTI(MPI_AINT, MPI_Aint),
    MULTI(MPI_OFFSET, MPI_Offset),
    MULTI(MPI_COUNT, MPI_Count),
    {MPI_C_BOOL, "MPI_C_BOOL", K_BOOL, sizeof(_Bool), F_NONE, 0, 0},
    {MPI_BYTE, "MPI_BYTE", K_BYTE, 1, F_NONE, 0, 0},
    {MPI_FLOAT, "MPI_FLOAT", K_FLOAT, sizeof(float), F_FLOAT, 0, 0},
    {MPI_DOUBLE, "MPI_DOUBLE", K_FLOAT, sizeof(double), F_DOUBLE, 0, 0},
    {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", K_FLOAT, sizeof(long double), F_LDOUBLE, 0, 0},
    {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", K_COMPLEX, sizeof(float _Complex), F_FLOAT,
     0, 0},
    {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", K_COMPLEX, sizeof(double _Complex),
     F_DOUBLE, 0, 0},
    {MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", K_COMPLEX,
     sizeof(long double _Complex), F_LDOUBLE, 0, 0},
    PAIR(MPI_FLOAT_INT, p_float, F_FLOAT),
    PAIR(MPI_DOUBLE_INT, p_double, F_DOUBLE),
    PAIR(MPI_LONG_INT, p_long, F_LONG),
    PAIR(MPI_2INT, p_int, F_INT),
    PAIR(MPI_SHORT_INT, p_short, F_SHORT),
    PAIR(MPI_LONG_DOUBLE_INT, p_ldouble, F_LDOUBLE),
};
#define NTYPES (sizeof types / sizeof types[0])

static const ttype *type_of(MPI_Datatype dt)
{
    for (size_t k = 0; k < NTYPES; k++)
        if (types[k].dt == dt)
            return &types[k];
    fail("no test type %d", dt);
}

/* Integer elements as their bits (zero-extended) and as signed values. */
static uint64_t load_bits(const unsigned char *p, size_t size)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (size) {
    case 1: memcpy(&u8, p, 1); return u8;
    case 2: memcpy(&u16, p, 2); return u16;
    case 4: memcpy(&u32, p, 4); return u32;
    default: memcpy(&u64, p, 8); return u64;
    }
}

static void store_bits(unsigned char *p, size_t size, uint64_t v)
{
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    switch (size) {
    case 1: memcpy(p, &u8, 1); break;
    case 2: memcpy(p, &u16, 2); break;
    case 4: memcpy(p, &u32, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

static int64_t sext(uint64_t v, size_t size)
{
    if (size == 8)
        return (int64_t)v;
    uint64_t sign = (uint64_t)1 << (size * 8 - 1);
    v &= (sign << 1) - 1;
    return (v & sign) ? (int64_t)(v - (sign << 1)) : (int64_t)v; /* (no overflow: v < 2^56) */
}

/* A real value of C type fsel at p. */
static long double fload(int fsel, const unsigned char *p)
{
    float f;
    double d;
    long double ld;
    long l;
    int i;
    short s;
    switch (fsel) {
    case F_FLOAT: memcpy(&f, p, sizeof f); return f;
    case F_DOUBLE: memcpy(&d, p, sizeof d); return d;
    case F_LDOUBLE: memcpy(&ld, p, sizeof ld); return ld;
    case F_LONG: memcpy(&l, p, sizeof l); return (long double)l;
    case F_INT: memcpy(&i, p, sizeof i); return i;
    default: memcpy(&s, p, sizeof s); return s;
    }
}

static void fstore(int fsel, unsigned char *p, long double v)
{
    float f = (float)v;
    double d = (double)v;
    long l = (long)v;
    int i = (int)v;
    short s = (short)v;
    switch (fsel) {
    case F_FLOAT: memcpy(p, &f, sizeof f); break;
    case F_DOUBLE: memcpy(p, &d, sizeof d); break;
    case F_LDOUBLE: memcpy(p, &v, sizeof v); break;
    case F_LONG: memcpy(p, &l, sizeof l); break;
    case F_INT: memcpy(p, &i, sizeof i); break;
    default: memcpy(p, &s, sizeof s); break;
    }
}

/* The part size of a complex of fsel: real part at 0, imaginary after. */
static size_t fsize(int fsel)
{
    return fsel == F_FLOAT ? sizeof(float) : fsel == F_DOUBLE ? sizeof(double)
                                                               : sizeof(long double);
}

/* ---- operands ------------------------------------------------------------------ */

/* What values an operand takes (all ranks agree from the seed). */
enum dist { D_SUM, D_PROD, D_MINMAX, D_BITS, D_LOGIC, D_AFFINE };

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static uint64_t hash3(uint64_t seed, int rank, size_t i)
{
    return mix(seed ^ mix((uint64_t)rank * 0x100000001b3u ^ mix((uint64_t)i)));
}

/* Rank `rank`'s element i for a test with this seed. */
static void gen(const ttype *t, int dist, uint64_t seed, int rank, size_t i, unsigned char *p)
{
    uint64_t h = hash3(seed, rank, i);
    static const long double prod_vals[] = {-2, -1, -0.5L, 0.5L, 1, 2};
    switch (t->kind) {
    case K_SINT:
    case K_UINT:
    case K_BYTE:
        /* any bits (integer arithmetic wraps, so sums and products are
         * exact); for the logical ops a quarter zeros */
        store_bits(p, t->size, dist == D_LOGIC && (h >> 62) == 0 ? 0 : h);
        break;
    case K_BOOL: {
        _Bool b = (h % 4) != 0;
        memcpy(p, &b, sizeof b);
        break;
    }
    case K_FLOAT:
        if (dist == D_PROD)
            fstore(t->fsel, p, prod_vals[h % 6]);
        else if (dist == D_MINMAX)
            fstore(t->fsel, p, (long double)(int)(h % 9) - 4);
        else
            fstore(t->fsel, p, (long double)(int)(h % 21) - 10);
        break;
    case K_COMPLEX: {
        long double re, im;
        if (dist == D_PROD) { /* 1, -1, i, -i, 1+i: exact products */
            static const int tab[5][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}, {1, 1}};
            re = tab[h % 5][0];
            im = tab[h % 5][1];
        } else if (dist == D_AFFINE) { /* x -> a x + b: a in {1, -1, 2}, b small */
            static const int as[3] = {1, -1, 2};
            re = as[h % 3];
            im = (long double)(int)((h >> 8) % 21) - 10;
        } else {
            re = (long double)(int)(h % 21) - 10;
            im = (long double)(int)((h >> 8) % 21) - 10;
        }
        fstore(t->fsel, p, re);
        fstore(t->fsel, p + fsize(t->fsel), im);
        break;
    }
    case K_PAIR: {
        /* few values and few indices: ties on both */
        int idx = (int)((h >> 16) % 7) - 1;
        fstore(t->fsel, p, (long double)(int)(h % 5) - 2);
        memcpy(p + t->ioff, &idx, sizeof idx);
        break;
    }
    }
}

/* ---- the reference: one element, io = in op io ------------------------------- */

static void ref_predef(const ttype *t, MPI_Op op, const unsigned char *in, unsigned char *io)
{
    switch (t->kind) {
    case K_SINT:
    case K_UINT:
    case K_BOOL:
    case K_BYTE: {
        uint64_t a = load_bits(in, t->size), b = load_bits(io, t->size), r;
        int64_t sa = sext(a, t->size), sb = sext(b, t->size);
        int sgn = t->kind == K_SINT;
        if (op == MPI_SUM) r = a + b;
        else if (op == MPI_PROD) r = a * b;
        else if (op == MPI_MAX) r = (sgn ? sa > sb : a > b) ? a : b;
        else if (op == MPI_MIN) r = (sgn ? sa < sb : a < b) ? a : b;
        else if (op == MPI_LAND) r = a != 0 && b != 0;
        else if (op == MPI_LOR) r = a != 0 || b != 0;
        else if (op == MPI_LXOR) r = (a != 0) != (b != 0);
        else if (op == MPI_BAND) r = a & b;
        else if (op == MPI_BOR) r = a | b;
        else if (op == MPI_BXOR) r = a ^ b;
        else fail("reference: op %d on %s", op, t->name);
        if (t->kind == K_BOOL) {
            _Bool v = r != 0;
            memcpy(io, &v, sizeof v);
        } else {
            store_bits(io, t->size, r);
        }
        break;
    }
    case K_FLOAT: {
        long double a = fload(t->fsel, in), b = fload(t->fsel, io), r;
        if (op == MPI_SUM) r = a + b;
        else if (op == MPI_PROD) r = a * b;
        else if (op == MPI_MAX) r = a > b ? a : b;
        else if (op == MPI_MIN) r = a < b ? a : b;
        else fail("reference: op %d on %s", op, t->name);
        fstore(t->fsel, io, r);
        break;
    }
    case K_COMPLEX: {
        size_t ps = fsize(t->fsel);
        long double ar = fload(t->fsel, in), ai = fload(t->fsel, in + ps);
        long double br = fload(t->fsel, io), bi = fload(t->fsel, io + ps), rr, ri;
        if (op == MPI_SUM) {
            rr = ar + br;
            ri = ai + bi;
        } else if (op == MPI_PROD) {
            rr = ar * br - ai * bi;
            ri = ar * bi + ai * br;
        } else {
            fail("reference: op %d on %s", op, t->name);
        }
        fstore(t->fsel, io, rr);
        fstore(t->fsel, io + ps, ri);
        break;
    }
    case K_PAIR: {
        long double a = fload(t->fsel, in), b = fload(t->fsel, io);
        int ai, bi;
        memcpy(&ai, in + t->ioff, sizeof ai);
        memcpy(&bi, io + t->ioff, sizeof bi);
        int take_a;
        if (op == MPI_MINLOC) take_a = a < b || (a == b && ai < bi);
        else if (op == MPI_MAXLOC) take_a = a > b || (a == b && ai < bi);
        else fail("reference: op %d on %s", op, t->name);
        if (take_a) {
            fstore(t->fsel, io, a);
            memcpy(io + t->ioff, &ai, sizeof ai);
        }
        break;
    }
    }
}

/* 1 if elements a and b are equal (values, not padding bytes). */
static int elem_eq(const ttype *t, const unsigned char *a, const unsigned char *b)
{
    switch (t->kind) {
    case K_FLOAT: return fload(t->fsel, a) == fload(t->fsel, b);
    case K_COMPLEX:
        return fload(t->fsel, a) == fload(t->fsel, b) &&
               fload(t->fsel, a + fsize(t->fsel)) == fload(t->fsel, b + fsize(t->fsel));
    case K_PAIR:
        return fload(t->fsel, a) == fload(t->fsel, b) &&
               memcmp(a + t->ioff, b + t->ioff, sizeof(int)) == 0;
    default: return load_bits(a, t->size) == load_bits(b, t->size);
    }
}

static void elem_str(const ttype *t, const unsigned char *p, char *s, size_t n)
{
    switch (t->kind) {
    case K_FLOAT: snprintf(s, n, "%Lg", fload(t->fsel, p)); break;
    case K_COMPLEX:
        snprintf(s, n, "(%Lg, %Lg)", fload(t->fsel, p), fload(t->fsel, p + fsize(t->fsel)));
        break;
    case K_PAIR: {
        int i;
        memcpy(&i, p + t->ioff, sizeof i);
        snprintf(s, n, "(%Lg, %d)", fload(t->fsel, p), i);
        break;
    }
    case K_SINT: snprintf(s, n, "%lld", (long long)sext(load_bits(p, t->size), t->size)); break;
    default: snprintf(s, n, "0x%llx", (unsigned long long)load_bits(p, t->size)); break;
    }
}

/* ---- user ops -------------------------------------------------------------------- */

static int user_bad; /* a user function saw a wrong datatype or length */

/* Commutative: wrapping int sum. */
static void u_int_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != MPI_INT || *len < 0)
        user_bad = 1;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = (int)((unsigned)a[i] + (unsigned)b[i]);
}

/* Not commutative: 2x2 matrices of 16-bit entries (mod 2^16) packed in a
 * uint64_t, multiplied: inout = in * inout. */
static void u_mat_mul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != MPI_UINT64_T || *len < 0)
        user_bad = 1;
    const uint64_t *a = in;
    uint64_t *b = inout;
    for (int i = 0; i < *len; i++) {
        uint32_t x[4], y[4];
        for (int k = 0; k < 4; k++) {
            x[k] = (uint32_t)(a[i] >> (16 * k)) & 0xffffu;
            y[k] = (uint32_t)(b[i] >> (16 * k)) & 0xffffu;
        }
        uint32_t r[4] = {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3],
                         x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3]};
        uint64_t v = 0;
        for (int k = 0; k < 4; k++)
            v |= (uint64_t)(r[k] & 0xffffu) << (16 * k);
        b[i] = v;
    }
}

/* Not commutative, 16-byte elements: the affine map x -> re x + im as a
 * double complex; inout = in o inout (composition). */
static void u_affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != MPI_C_DOUBLE_COMPLEX || *len < 0)
        user_bad = 1;
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++) {
        double a1 = a[2 * i], b1 = a[2 * i + 1], a2 = b[2 * i], b2 = b[2 * i + 1];
        b[2 * i] = a1 * a2;
        b[2 * i + 1] = a1 * b2 + b1;
    }
}

/* Commutative, 16-byte elements: complex sum. */
static void u_csum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != MPI_C_DOUBLE_COMPLEX || *len < 0)
        user_bad = 1;
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < 2 * *len; i++)
        b[i] += a[i];
}

/* ---- test cases ------------------------------------------------------------------- */

typedef struct tcase {
    const ttype *t;
    MPI_Op op;
    const char *opname;
    MPI_User_function *user; /* user op: its function, for the reference */
    int dist;
    int rep; /* representative: every root, blocking forms at every count */
    int big; /* also the largest count */
} tcase;

static const struct {
    MPI_Op op;
    const char *name;
} predef[] = {
    {MPI_MAX, "MPI_MAX"},   {MPI_MIN, "MPI_MIN"},   {MPI_SUM, "MPI_SUM"},
    {MPI_PROD, "MPI_PROD"}, {MPI_LAND, "MPI_LAND"}, {MPI_BAND, "MPI_BAND"},
    {MPI_LOR, "MPI_LOR"},   {MPI_BOR, "MPI_BOR"},   {MPI_LXOR, "MPI_LXOR"},
    {MPI_BXOR, "MPI_BXOR"}, {MPI_MINLOC, "MPI_MINLOC"}, {MPI_MAXLOC, "MPI_MAXLOC"},
};

/* MPI-3.1 §5.9.2: is op defined on t? */
static int valid(const ttype *t, MPI_Op op)
{
    int minmax = op == MPI_MAX || op == MPI_MIN, sumprod = op == MPI_SUM || op == MPI_PROD;
    int logical = op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
    int bitwise = op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR;
    switch (t->kind) {
    case K_SINT:
    case K_UINT: return minmax || sumprod || bitwise || (logical && !t->multi);
    case K_BOOL: return logical;
    case K_BYTE: return bitwise;
    case K_FLOAT: return minmax || sumprod;
    case K_COMPLEX: return sumprod;
    case K_PAIR: return op == MPI_MINLOC || op == MPI_MAXLOC;
    }
    return 0;
}

static int dist_of(MPI_Op op)
{
    if (op == MPI_SUM) return D_SUM;
    if (op == MPI_PROD) return D_PROD;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return D_LOGIC;
    if (op == MPI_MAX || op == MPI_MIN) return D_MINMAX;
    return D_BITS;
}

/* The largest count (the split allreduce algorithms, every carrier kind)
 * for a few. */
static int is_big(MPI_Datatype dt, MPI_Op op)
{
    return (dt == MPI_INT && op == MPI_SUM) || (dt == MPI_DOUBLE && op == MPI_SUM) ||
           (dt == MPI_C_FLOAT_COMPLEX && op == MPI_SUM) ||
           (dt == MPI_DOUBLE_INT && op == MPI_MAXLOC) || (dt == MPI_2INT && op == MPI_MINLOC);
}

static int is_rep(MPI_Datatype dt, MPI_Op op)
{
    return (dt == MPI_INT && op == MPI_SUM) || (dt == MPI_DOUBLE && op == MPI_SUM) ||
           (dt == MPI_UINT8_T && op == MPI_BXOR) || (dt == MPI_LONG_DOUBLE && op == MPI_MAX) ||
           (dt == MPI_C_FLOAT_COMPLEX && op == MPI_SUM) ||
           (dt == MPI_C_DOUBLE_COMPLEX && op == MPI_PROD) ||
           (dt == MPI_C_LONG_DOUBLE_COMPLEX && op == MPI_SUM) ||
           (dt == MPI_DOUBLE_INT && op == MPI_MAXLOC) || (dt == MPI_2INT && op == MPI_MINLOC) ||
           (dt == MPI_LONG_DOUBLE_INT && op == MPI_MINLOC);
}

/* ---- running one case ------------------------------------------------------------ */

static uint64_t seq; /* cases run so far: seeds and roots vary with it */

/* io = in op io, as the case's op does it. */
static void combine(const tcase *c, const unsigned char *in, unsigned char *io)
{
    if (c->user != NULL) {
        int one = 1;
        MPI_Datatype dt = c->t->dt;
        c->user((void *)in, io, &one, &dt);
    } else {
        ref_predef(c->t, c->op, in, io);
    }
}

/* Everyone's operands of element i folded in rank order:
 * x0 op (x1 op (... op x(n-1))). */
static void reference(const tcase *c, uint64_t seed, size_t count, unsigned char *ref)
{
    size_t es = c->t->size;
    unsigned char *x = xcalloc(1, es);
    for (size_t i = 0; i < count; i++) {
        unsigned char *acc = ref + i * es;
        gen(c->t, c->dist, seed, nranks - 1, i, acc);
        for (int r = nranks - 2; r >= 0; r--) {
            gen(c->t, c->dist, seed, r, i, x);
            combine(c, x, acc);
        }
    }
    free(x);
}

static void check(const tcase *c, const char *what, int count, const unsigned char *got,
                  const unsigned char *want)
{
    size_t es = c->t->size;
    for (size_t i = 0; i < (size_t)count; i++) {
        if (!elem_eq(c->t, got + i * es, want + i * es)) {
            char g[96], w[96];
            elem_str(c->t, got + i * es, g, sizeof g);
            elem_str(c->t, want + i * es, w, sizeof w);
            fail("%s, %s on %s, count %d (%d ranks): element %zu is %s, expected %s", what,
                 c->opname, c->t->name, count, nranks, i, g, w);
        }
    }
    if (user_bad)
        fail("%s, %s on %s, count %d: the user function saw a wrong datatype or length", what,
             c->opname, c->t->name, count);
}

static void check_same(const tcase *c, const char *what, int count, const void *buf,
                       const void *orig, const char *which)
{
    if (memcmp(buf, orig, (size_t)count * c->t->size) != 0)
        fail("%s, %s on %s, count %d: %s was modified", what, c->opname, c->t->name, count,
             which);
}

/* One count of a case: the operands, the reference and the buffers. */
typedef struct run {
    int count;
    size_t bytes;
    uint64_t seed;
    int root1, root2; /* the non-blocking reduces' roots */
    unsigned char *mine, *orig, *ref;
    unsigned char *all, *all_ip, *red_ip, *red, *guard, *guard0;
    MPI_Request rq[4];
} run;

static void run_init(const tcase *c, run *r, int count)
{
    const ttype *t = c->t;
    size_t n = (size_t)count, es = t->size;
    r->count = count;
    r->bytes = n * es;
    r->seed = mix(++seq);
    r->root1 = (int)(seq % (uint64_t)nranks);
    r->root2 = (int)((seq + 1) % (uint64_t)nranks);
    unsigned char **bufs[] = {&r->mine, &r->orig, &r->ref, &r->all, &r->all_ip,
                              &r->red_ip, &r->red, &r->guard, &r->guard0};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        *bufs[k] = xcalloc(n, es);
    for (size_t i = 0; i < n; i++)
        gen(t, c->dist, r->seed, me, i, r->mine + i * es);
    memcpy(r->orig, r->mine, r->bytes);
    memset(r->guard, 0x5a, r->bytes);
    memset(r->guard0, 0x5a, r->bytes);
    reference(c, r->seed, n, r->ref);
}

static void run_fini(run *r)
{
    unsigned char *bufs[] = {r->mine, r->orig, r->ref, r->all, r->all_ip,
                             r->red_ip, r->red, r->guard, r->guard0};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        free(bufs[k]);
}

/* Post the non-blocking forms: Iallreduce, Iallreduce in place, Ireduce
 * in place at root1 (recvbuf NULL elsewhere), Ireduce to root2 (a guard
 * buffer elsewhere, which must stay untouched). */
static void run_post(const tcase *c, run *r)
{
    MPI_Datatype dt = c->t->dt;
    int n = r->count;
    memcpy(r->all_ip, r->mine, r->bytes);
    memcpy(r->red_ip, r->mine, r->bytes);
    OK(MPI_Iallreduce(r->mine, r->all, n, dt, c->op, MPI_COMM_WORLD, &r->rq[0]));
    OK(MPI_Iallreduce(MPI_IN_PLACE, r->all_ip, n, dt, c->op, MPI_COMM_WORLD, &r->rq[1]));
    if (me == r->root1)
        OK(MPI_Ireduce(MPI_IN_PLACE, r->red_ip, n, dt, c->op, r->root1, MPI_COMM_WORLD,
                       &r->rq[2]));
    else
        OK(MPI_Ireduce(r->mine, NULL, n, dt, c->op, r->root1, MPI_COMM_WORLD, &r->rq[2]));
    OK(MPI_Ireduce(r->mine, me == r->root2 ? r->red : r->guard, n, dt, c->op, r->root2,
                   MPI_COMM_WORLD, &r->rq[3]));
}

static void run_check_posted(const tcase *c, const run *r)
{
    int n = r->count;
    check(c, "MPI_Iallreduce", n, r->all, r->ref);
    check(c, "MPI_Iallreduce (MPI_IN_PLACE)", n, r->all_ip, r->ref);
    if (me == r->root1)
        check(c, "MPI_Ireduce (MPI_IN_PLACE)", n, r->red_ip, r->ref);
    if (me == r->root2)
        check(c, "MPI_Ireduce", n, r->red, r->ref);
    else
        check_same(c, "MPI_Ireduce (non-root)", n, r->guard, r->guard0, "recvbuf");
    check_same(c, "MPI_Ireduce / MPI_Iallreduce", n, r->mine, r->orig, "sendbuf");
}

/* The blocking forms: Allreduce, Reduce (every root if all_roots, else
 * one; a guard buffer at the others), both in place. */
static void run_blocking(const tcase *c, run *r, int all_roots)
{
    MPI_Datatype dt = c->t->dt;
    int n = r->count;
    memset(r->all, 0, r->bytes);
    OK(MPI_Allreduce(r->mine, r->all, n, dt, c->op, MPI_COMM_WORLD));
    check(c, "MPI_Allreduce", n, r->all, r->ref);
    for (int k = 0; k < (all_roots ? nranks : 1); k++) {
        int root = (r->root1 + k) % nranks;
        memset(r->red, 0, r->bytes);
        OK(MPI_Reduce(r->mine, me == root ? r->red : r->guard, n, dt, c->op, root,
                      MPI_COMM_WORLD));
        if (me == root)
            check(c, "MPI_Reduce", n, r->red, r->ref);
        else
            check_same(c, "MPI_Reduce (non-root)", n, r->guard, r->guard0, "recvbuf");
    }
    memcpy(r->red_ip, r->mine, r->bytes);
    OK(MPI_Reduce(me == r->root2 ? MPI_IN_PLACE : r->mine, me == r->root2 ? r->red_ip : NULL,
                  n, dt, c->op, r->root2, MPI_COMM_WORLD));
    if (me == r->root2)
        check(c, "MPI_Reduce (MPI_IN_PLACE)", n, r->red_ip, r->ref);
    memcpy(r->all_ip, r->mine, r->bytes);
    OK(MPI_Allreduce(MPI_IN_PLACE, r->all_ip, n, dt, c->op, MPI_COMM_WORLD));
    check(c, "MPI_Allreduce (MPI_IN_PLACE)", n, r->all_ip, r->ref);
    check_same(c, "MPI_Reduce / MPI_Allreduce", n, r->mine, r->orig, "sendbuf");
}

/* Reduce_local (one rank per count): everyone's operands folded from the
 * last rank down. */
static void run_local(const tcase *c, run *r)
{
    const ttype *t = c->t;
    size_t es = t->size, n = (size_t)r->count;
    unsigned char *acc = r->all, *x = r->all_ip;
    for (size_t i = 0; i < n; i++)
        gen(t, c->dist, r->seed, nranks - 1, i, acc + i * es);
    for (int k = nranks - 2; k >= 0; k--) {
        for (size_t i = 0; i < n; i++)
            gen(t, c->dist, r->seed, k, i, x + i * es);
        OK(MPI_Reduce_local(x, acc, r->count, t->dt, c->op));
    }
    check(c, "MPI_Reduce_local", r->count, acc, r->ref);
}

/* Every count of a case: the non-blocking forms of all counts at once
 * (many collectives outstanding), then the blocking ones on some counts
 * (the representatives: all of them, with every root). */
static void run_case(const tcase *c)
{
    static const int counts[] = {0, 1, 7, 1000, 100000};
    enum { NC = sizeof counts / sizeof counts[0] };
    run runs[NC];
    MPI_Request rq[4 * NC];
    MPI_Status st[4 * NC];
    int nc = c->big ? NC : NC - 1;
    for (int k = 0; k < nc; k++) {
        run_init(c, &runs[k], counts[k]);
        run_post(c, &runs[k]);
        memcpy(&rq[4 * k], runs[k].rq, sizeof runs[k].rq);
    }
    OK(MPI_Waitall(4 * nc, rq, st));
    for (int k = 0; k < 4 * nc; k++)
        if (rq[k] != MPI_REQUEST_NULL)
            fail("MPI_Waitall left request %d set", k);
    for (int k = 0; k < nc; k++) {
        run_check_posted(c, &runs[k]);
        if (c->rep || counts[k] == 7)
            run_blocking(c, &runs[k], c->rep && counts[k] <= 1000);
        if (me == runs[k].root1 && counts[k] <= 1000)
            run_local(c, &runs[k]);
        run_fini(&runs[k]);
    }
}

/* ---- invalid calls ------------------------------------------------------------------ */

static void expect_class(const char *what, int rc, int want)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        OK(MPI_Error_class(rc, &cls));
    if (cls != want)
        fail("%s: error class %d, expected %d", what, cls, want);
}

static void invalid_calls(void)
{
    int a[4] = {1, 2, 3, 4}, b[4];
    MPI_Request rq;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    expect_class("MPI_SUM on MPI_2INT",
                 MPI_Allreduce(a, b, 2, MPI_2INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    expect_class("MPI_MINLOC on MPI_INT",
                 MPI_Allreduce(a, b, 2, MPI_INT, MPI_MINLOC, MPI_COMM_WORLD), MPI_ERR_OP);
    expect_class("MPI_BAND on MPI_FLOAT",
                 MPI_Reduce(a, b, 2, MPI_FLOAT, MPI_BAND, 0, MPI_COMM_WORLD), MPI_ERR_OP);
    expect_class("MPI_LAND on MPI_DOUBLE",
                 MPI_Iallreduce(a, b, 1, MPI_DOUBLE, MPI_LAND, MPI_COMM_WORLD, &rq), MPI_ERR_OP);
    expect_class("MPI_MAX on MPI_C_FLOAT_COMPLEX",
                 MPI_Allreduce(a, b, 1, MPI_C_FLOAT_COMPLEX, MPI_MAX, MPI_COMM_WORLD),
                 MPI_ERR_OP);
    expect_class("MPI_SUM on MPI_BYTE",
                 MPI_Allreduce(a, b, 4, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    expect_class("MPI_SUM on MPI_C_BOOL",
                 MPI_Allreduce(a, b, 4, MPI_C_BOOL, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    expect_class("MPI_BXOR on MPI_2INT (Reduce_local)",
                 MPI_Reduce_local(a, b, 2, MPI_2INT, MPI_BXOR), MPI_ERR_OP);
    expect_class("bad root", MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, nranks, MPI_COMM_WORLD),
                 MPI_ERR_ROOT);
    expect_class("negative root",
                 MPI_Ireduce(a, b, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD, &rq), MPI_ERR_ROOT);
    expect_class("negative count", MPI_Allreduce(a, b, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                 MPI_ERR_COUNT);
    expect_class("negative count (Reduce)",
                 MPI_Reduce(a, b, -3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    expect_class("negative count (Reduce_local)", MPI_Reduce_local(a, b, -1, MPI_INT, MPI_SUM),
                 MPI_ERR_COUNT);
    expect_class("MPI_DATATYPE_NULL",
                 MPI_Allreduce(a, b, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD),
                 MPI_ERR_TYPE);
    expect_class("MPI_DATATYPE_NULL (Reduce)",
                 MPI_Reduce(a, b, 1, MPI_DATATYPE_NULL, MPI_SUM, 0, MPI_COMM_WORLD),
                 MPI_ERR_TYPE);
    expect_class("MPI_OP_NULL", MPI_Allreduce(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD),
                 MPI_ERR_OP);
    expect_class("MPI_OP_NULL (Ireduce)",
                 MPI_Ireduce(a, b, 1, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD, &rq), MPI_ERR_OP);
    expect_class("MPI_OP_NULL (Reduce_local)", MPI_Reduce_local(a, b, 1, MPI_INT, MPI_OP_NULL),
                 MPI_ERR_OP);
    expect_class("MPI_Op_free(MPI_SUM)", MPI_Op_free(&(MPI_Op){MPI_SUM}), MPI_ERR_OP);
    expect_class("MPI_Type_size(MPI_DATATYPE_NULL)",
                 MPI_Type_size(MPI_DATATYPE_NULL, &(int){0}), MPI_ERR_TYPE);
    if (nranks > 1 && me != 0) /* (the root takes no part: nothing starts) */
        expect_class("MPI_IN_PLACE at a non-root",
                     MPI_Reduce(MPI_IN_PLACE, b, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD),
                     MPI_ERR_BUFFER);

    /* Nothing started: the ranks are still in step. */
    int one = 1, total = 0;
    OK(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (total != nranks)
        fail("after the invalid calls: sum of ones is %d, expected %d", total, nranks);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* ---- edge cases ------------------------------------------------------------------------- */

/* Count 0 with NULL buffers is valid everywhere (and still a collective);
 * the barrier and broadcast the reductions' tests take for granted. */
static void edge_cases(void)
{
    int root = nranks - 1;
    OK(MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Allreduce(MPI_IN_PLACE, NULL, 0, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    OK(MPI_Reduce(me == root ? MPI_IN_PLACE : NULL, NULL, 0, MPI_INT, MPI_SUM, root,
                  MPI_COMM_WORLD));
    OK(MPI_Reduce(NULL, NULL, 0, MPI_2INT, MPI_MINLOC, 0, MPI_COMM_WORLD));
    OK(MPI_Reduce_local(NULL, NULL, 0, MPI_LONG_DOUBLE, MPI_PROD));
    OK(MPI_Bcast(NULL, 0, MPI_INT, root, MPI_COMM_WORLD));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Request rq[2];
    MPI_Status st[2];
    long v[3] = {0, 0, 0};
    if (me == root) {
        v[0] = 11;
        v[1] = -22;
        v[2] = 33;
    }
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Ibcast(v, 3, MPI_LONG, root, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Waitall(2, rq, st));
    if (v[0] != 11 || v[1] != -22 || v[2] != 33)
        fail("MPI_Ibcast: got %ld %ld %ld", v[0], v[1], v[2]);
}

/* ---- user op handles ------------------------------------------------------------------ */

/* Op_commutative reports the flag, freed slots are reused safely, and
 * freeing an op while a collective with it runs does not disturb it. */
static void op_handles(void)
{
    MPI_Op op, op2;
    int comm;
    OK(MPI_Op_commutative(MPI_SUM, &comm));
    if (!comm)
        fail("MPI_SUM is not commutative");
    OK(MPI_Op_create(u_mat_mul, 0, &op));
    OK(MPI_Op_commutative(op, &comm));
    if (comm)
        fail("a non-commutative op reports commutative");
    OK(MPI_Op_free(&op));
    if (op != MPI_OP_NULL)
        fail("MPI_Op_free did not set MPI_OP_NULL");
    OK(MPI_Op_create(u_int_sum, 1, &op2));
    OK(MPI_Op_commutative(op2, &comm));
    if (!comm)
        fail("a commutative op reports non-commutative");

    enum { N = 1000 };
    int *x = xcalloc(N, sizeof *x), *y = xcalloc(N, sizeof *y);
    for (int i = 0; i < N; i++)
        x[i] = i + me;
    MPI_Request rq;
    OK(MPI_Iallreduce(x, y, N, MPI_INT, op2, MPI_COMM_WORLD, &rq));
    OK(MPI_Op_free(&op2));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++)
        if (y[i] != nranks * i + nranks * (nranks - 1) / 2)
            fail("Iallreduce with an op freed while it ran: element %d is %d", i, y[i]);
    free(x);
    free(y);
}

/* ---- main ----------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
    double t0 = MPI_Wtime();

    /* The type sizes agree with the C types. */
    for (size_t k = 0; k < NTYPES; k++) {
        int size;
        OK(MPI_Type_size(types[k].dt, &size));
        if ((size_t)size != types[k].size)
            fail("MPI_Type_size(%s) is %d, expected %zu", types[k].name, size, types[k].size);
    }

    tcase cases[NTYPES * 12 + 4];
    size_t ncases = 0;
    for (size_t k = 0; k < NTYPES; k++)
        for (size_t j = 0; j < sizeof predef / sizeof predef[0]; j++)
            if (valid(&types[k], predef[j].op))
                cases[ncases++] = (tcase){&types[k], predef[j].op, predef[j].name, NULL,
                                          dist_of(predef[j].op),
                                          is_rep(types[k].dt, predef[j].op),
                                          is_big(types[k].dt, predef[j].op)};
    static const struct {
        MPI_User_function *fn;
        int commute;
        MPI_Datatype dt;
        const char *name;
        int dist, big;
    } users[] = {
        {u_int_sum, 1, MPI_INT, "user int sum (commutative)", D_SUM, 1},
        {u_mat_mul, 0, MPI_UINT64_T, "user 2x2 matrix product (non-commutative)", D_BITS, 1},
        {u_affine, 0, MPI_C_DOUBLE_COMPLEX, "user affine composition (non-commutative)",
         D_AFFINE, 1},
        {u_csum, 1, MPI_C_DOUBLE_COMPLEX, "user complex sum (commutative)", D_SUM, 0},
    };
    MPI_Op uops[4];
    for (size_t k = 0; k < 4; k++) {
        OK(MPI_Op_create(users[k].fn, users[k].commute, &uops[k]));
        cases[ncases++] = (tcase){type_of(users[k].dt), uops[k], users[k].name, users[k].fn,
                                  users[k].dist, 1, users[k].big};
    }

    for (size_t k = 0; k < ncases; k++)
        run_case(&cases[k]);

    for (size_t k = 0; k < 4; k++)
        OK(MPI_Op_free(&uops[k]));
    op_handles();
    edge_cases();
    invalid_calls();

    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0)
        printf("test_mpi_reduce: OK (%zu cases, %d ranks, %.2f s)\n", ncases, nranks,
               MPI_Wtime() - t0);
    OK(MPI_Finalize());
    return 0;
}
