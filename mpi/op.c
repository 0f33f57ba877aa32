/*
 * op.c — reduction operations: the program's ops (MPI_Op_create), the
 * validity of an op on a type (MPI-3.1 §5.9.2), and how a reduction is
 * handed to the engine (qmpi_reduction_init).
 *
 * A predefined op on a type the engine has a kernel for runs as the
 * engine's own op. Everything else, user functions and the predefined ops
 * on long double, complex and the MINLOC / MAXLOC pairs, runs as an
 * engine QUAY_OP_USER whose function (reduction_user_fn) calls the
 * binding's kernel or the program's function. The engine then moves
 * opaque "carrier" elements: the unsigned integer of the MPI type's size
 * when there is one (so its split algorithms cut only between elements),
 * else bytes, with the op marked non-commutative so that only the
 * algorithms that never split a vector run.
 *
 * Op handles: predefined 0x58000001..0x5800000c (mpi.h); the program's
 * 0x58000100 + their index in the table below, which grows as needed and
 * reuses freed slots.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qmpi.h"


#define OP_PREDEF_FIRST MPI_MAX
#define OP_PREDEF_LAST MPI_MAXLOC
#define OP_USER_BASE 0x58000100u
/* User handles stay below 0x59000000. */
#define OP_USER_MAX (0x01000000u - 0x100u)

/* ---- the program's ops ---------------------------------------------------- */

typedef struct user_op {
    MPI_User_function *fn; /* NULL: the slot is free */
    int commute;
} user_op;

static user_op *user_ops;
static uint32_t user_ops_len, user_ops_cap;

/* The program's op behind a handle, or NULL (predefined, freed or bad). */
static const user_op *user_op_get(MPI_Op op)
{
    uint32_t i = (uint32_t)op - OP_USER_BASE; /* below the base: wraps, too large */
    if (i >= user_ops_len || user_ops[i].fn == NULL)
        return NULL;
    return &user_ops[i];
}

static int op_is_predefined(MPI_Op op)
{
    return op >= OP_PREDEF_FIRST && op <= OP_PREDEF_LAST;
}

/* A free slot's index (growing the table if none): MPI_SUCCESS or
 * MPI_ERR_NO_MEM. */
static int user_op_slot(uint32_t *index)
{
    for (uint32_t i = 0; i < user_ops_len; i++) {
        if (user_ops[i].fn == NULL) {
            *index = i;
            return MPI_SUCCESS;
        }
    }
    if (user_ops_len == user_ops_cap) {
        if (user_ops_cap >= OP_USER_MAX)
            return MPI_ERR_NO_MEM;
        uint32_t cap = user_ops_cap == 0 ? 8 : user_ops_cap * 2;
        if (cap > OP_USER_MAX)
            cap = OP_USER_MAX;
        user_op *t = realloc(user_ops, (size_t)cap * sizeof *t);
        if (t == NULL)
            return MPI_ERR_NO_MEM;
        user_ops = t;
        user_ops_cap = cap;
    }
    *index = user_ops_len++;
    return MPI_SUCCESS;
}

int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    static const char fn[] = "MPI_Op_create";
    QMPI_ENTER(fn);
    if (user_fn == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "user_fn is NULL");
    if (op == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "op is NULL");
    uint32_t i;
    int rc = user_op_slot(&i);
    if (rc != MPI_SUCCESS)
        return qmpi_raise(MPI_COMM_WORLD, rc, fn, "no room for another op");
    user_ops[i].fn = user_fn;
    user_ops[i].commute = commute != 0;
    *op = (MPI_Op)(OP_USER_BASE + i);
    return MPI_SUCCESS;
}

/* A collective still running with the op is unaffected: its reduction
 * holds the function itself, not the handle. */
int MPI_Op_free(MPI_Op *op)
{
    static const char fn[] = "MPI_Op_free";
    QMPI_ENTER(fn);
    if (op == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "op is NULL");
    if (op_is_predefined(*op))
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_OP, fn, "op %#x is predefined", (unsigned)*op);
    if (user_op_get(*op) == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_OP, fn, "invalid op %#x", (unsigned)*op);
    user_ops[(uint32_t)*op - OP_USER_BASE].fn = NULL;
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}

int MPI_Op_commutative(MPI_Op op, int *commute)
{
    static const char fn[] = "MPI_Op_commutative";
    QMPI_ENTER(fn);
    const user_op *u = user_op_get(op);
    if (!op_is_predefined(op) && u == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_OP, fn, "invalid op %#x", (unsigned)op);
    if (commute == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "commute is NULL");
    *commute = u != NULL ? u->commute : 1;
    return MPI_SUCCESS;
}

void qmpi_ops_fini(void)
{
    free(user_ops);
    user_ops = NULL;
    user_ops_len = user_ops_cap = 0;
}

/* ---- the binding's kernels -------------------------------------------------- */

/* Elements are loaded and stored with memcpy: the engine's temporaries
 * need not be aligned for long double. a = in[i], b = inout[i]. */
#define KERNEL(name, T, EXPR)                                                              \
    static void name(const void *in, void *inout, size_t n)                                \
    {                                                                                      \
        const unsigned char *pi = in;                                                      \
        unsigned char *po = inout;                                                         \
        for (size_t i = 0; i < n; i++) {                                                   \
            T a, b;                                                                        \
            memcpy(&a, pi + i * sizeof(T), sizeof(T));                                     \
            memcpy(&b, po + i * sizeof(T), sizeof(T));                                     \
            b = (EXPR);                                                                    \
            memcpy(po + i * sizeof(T), &b, sizeof(T));                                     \
        }                                                                                  \
    }

/* As the engine's float kernels: NaN or a tie keeps inout[i]. */
KERNEL(k_ld_max, long double, a > b ? a : b)
KERNEL(k_ld_min, long double, a < b ? a : b)
KERNEL(k_ld_sum, long double, a + b)
KERNEL(k_ld_prod, long double, a * b)
KERNEL(k_cf_prod, float _Complex, a * b)
KERNEL(k_cd_prod, double _Complex, a * b)
KERNEL(k_cld_prod, long double _Complex, a * b)

/* Complex sum is the sum of the parts. */
static void k_cld_sum(const void *in, void *inout, size_t n)
{
    k_ld_sum(in, inout, 2 * n);
}

/* MINLOC / MAXLOC on {value, int index} (MPI-3.1 §5.9.4): the smaller
 * (larger) value with its index; on equal values the smaller index. The
 * struct is the pair type's layout (dtype.c sizes the same structs). */
#define PAIR_KERNELS(tag, T)                                                               \
    typedef struct pair_##tag {                                                            \
        T v;                                                                               \
        int i;                                                                             \
    } pair_##tag;                                                                          \
    static void k_##tag##_minloc(const void *in, void *inout, size_t n)                    \
    {                                                                                      \
        const unsigned char *pi = in;                                                      \
        unsigned char *po = inout;                                                         \
        for (size_t k = 0; k < n; k++) {                                                   \
            pair_##tag a, b;                                                               \
            memcpy(&a, pi + k * sizeof a, sizeof a);                                       \
            memcpy(&b, po + k * sizeof b, sizeof b);                                       \
            if (a.v < b.v || (a.v == b.v && a.i < b.i))                                    \
                memcpy(po + k * sizeof b, &a, sizeof a);                                   \
        }                                                                                  \
    }                                                                                      \
    static void k_##tag##_maxloc(const void *in, void *inout, size_t n)                    \
    {                                                                                      \
        const unsigned char *pi = in;                                                      \
        unsigned char *po = inout;                                                         \
        for (size_t k = 0; k < n; k++) {                                                   \
            pair_##tag a, b;                                                               \
            memcpy(&a, pi + k * sizeof a, sizeof a);                                       \
            memcpy(&b, po + k * sizeof b, sizeof b);                                       \
            if (a.v > b.v || (a.v == b.v && a.i < b.i))                                    \
                memcpy(po + k * sizeof b, &a, sizeof a);                                   \
        }                                                                                  \
    }

PAIR_KERNELS(float_int, float)
PAIR_KERNELS(double_int, double)
PAIR_KERNELS(long_int, long)
PAIR_KERNELS(2int, int)
PAIR_KERNELS(short_int, short)
PAIR_KERNELS(long_double_int, long double)

typedef void kernel_fn(const void *in, void *inout, size_t n);

/* The binding's kernel of predefined op on dt, or NULL if it has none. */
static kernel_fn *kernel_for(MPI_Op op, MPI_Datatype dt)
{
    switch (dt) {
    case MPI_LONG_DOUBLE:
        return op == MPI_MAX ? k_ld_max : op == MPI_MIN ? k_ld_min
             : op == MPI_SUM ? k_ld_sum : op == MPI_PROD ? k_ld_prod : NULL;
    case MPI_C_FLOAT_COMPLEX: return op == MPI_PROD ? k_cf_prod : NULL;
    case MPI_C_DOUBLE_COMPLEX: return op == MPI_PROD ? k_cd_prod : NULL;
    case MPI_C_LONG_DOUBLE_COMPLEX:
        return op == MPI_PROD ? k_cld_prod : op == MPI_SUM ? k_cld_sum : NULL;
#define PAIR_CASE(handle, tag)                                                             \
    case handle:                                                                           \
        return op == MPI_MINLOC ? k_##tag##_minloc : op == MPI_MAXLOC ? k_##tag##_maxloc : NULL;
        PAIR_CASE(MPI_FLOAT_INT, float_int)
        PAIR_CASE(MPI_DOUBLE_INT, double_int)
        PAIR_CASE(MPI_LONG_INT, long_int)
        PAIR_CASE(MPI_2INT, 2int)
        PAIR_CASE(MPI_SHORT_INT, short_int)
        PAIR_CASE(MPI_LONG_DOUBLE_INT, long_double_int)
#undef PAIR_CASE
    default: return NULL;
    }
}

/* ---- validity and the engine's op ------------------------------------------ */

/* 1 if predefined op applies to type class tc (MPI-3.1 §5.9.2). */
static int op_allows(MPI_Op op, int tc)
{
    switch (op) {
    case MPI_MAX:
    case MPI_MIN: return tc == QMPI_TC_INT || tc == QMPI_TC_FLOAT;
    case MPI_SUM:
    case MPI_PROD: return tc == QMPI_TC_INT || tc == QMPI_TC_FLOAT || tc == QMPI_TC_COMPLEX;
    case MPI_LAND:
    case MPI_LOR:
    case MPI_LXOR: return tc == QMPI_TC_INT || tc == QMPI_TC_BOOL;
    case MPI_BAND:
    case MPI_BOR:
    case MPI_BXOR: return tc == QMPI_TC_INT || tc == QMPI_TC_BYTE;
    case MPI_MINLOC:
    case MPI_MAXLOC: return tc == QMPI_TC_PAIR;
    default: return 0;
    }
}

/* The engine's op for a predefined MPI op, 0 for MINLOC / MAXLOC. */
static quay_op_kind engine_kind(MPI_Op op)
{
    switch (op) {
    case MPI_MAX: return QUAY_OP_MAX;
    case MPI_MIN: return QUAY_OP_MIN;
    case MPI_SUM: return QUAY_OP_SUM;
    case MPI_PROD: return QUAY_OP_PROD;
    case MPI_LAND: return QUAY_OP_LAND;
    case MPI_BAND: return QUAY_OP_BAND;
    case MPI_LOR: return QUAY_OP_LOR;
    case MPI_BOR: return QUAY_OP_BOR;
    case MPI_LXOR: return QUAY_OP_LXOR;
    case MPI_BXOR: return QUAY_OP_BXOR;
    default: return (quay_op_kind)0;
    }
}

/* The engine's type for the real and imaginary parts of a complex type,
 * 0 if it has none. */
static quay_dtype complex_part(MPI_Datatype dt)
{
    const qmpi_type *part = qmpi_type_get(dt == MPI_C_FLOAT_COMPLEX    ? MPI_FLOAT
                                          : dt == MPI_C_DOUBLE_COMPLEX ? MPI_DOUBLE
                                                                       : MPI_LONG_DOUBLE);
    return part->q;
}

/* The engine calls this for QUAY_OP_USER: n carrier elements of type cdt
 * become MPI elements, for the binding's kernel or the program's
 * function. The operand order is the engine's and MPI's alike (in: the
 * lower ranks). */
static void reduction_user_fn(const void *in, void *inout, size_t n, quay_dtype cdt,
                              void *ctx)
{
    const qmpi_reduction *red = ctx;
    size_t m = n * quay_dtype_size(cdt) / red->tsize;
    if (red->kernel != NULL) {
        red->kernel(in, inout, m);
        return;
    }
    /* m never exceeds the call's int count; chunked all the same. */
    const unsigned char *pi = in;
    unsigned char *po = inout;
    while (m > 0) {
        int len = m > INT_MAX ? INT_MAX : (int)m;
        MPI_Datatype dt = red->dt; /* the function may not write through it */
        red->user((void *)pi, po, &len, &dt);
        pi += (size_t)len * red->tsize;
        po += (size_t)len * red->tsize;
        m -= (size_t)len;
    }
}

int qmpi_reduction_init(qmpi_reduction *red, MPI_Op op, MPI_Datatype dt, int count)
{
    memset(red, 0, sizeof *red);
    const qmpi_type *t = qmpi_type_get(dt);
    if (t == NULL)
        return MPI_ERR_TYPE;
    if (count < 0)
        return MPI_ERR_COUNT;
    size_t n = (size_t)count;
    int commutative = 1;
    if (op_is_predefined(op)) {
        if (!op_allows(op, t->tclass))
            return MPI_ERR_OP;
        quay_op_kind k = engine_kind(op);
        quay_dtype part = t->tclass == QMPI_TC_COMPLEX ? complex_part(dt) : (quay_dtype)0;
        if (k != 0 && t->q != 0) {
            red->op = (quay_op){k, 1, NULL, NULL};
            red->qdt = t->q;
            red->qcount = n;
            return MPI_SUCCESS;
        }
        if (op == MPI_SUM && part != 0) {
            red->op = (quay_op){QUAY_OP_SUM, 1, NULL, NULL};
            red->qdt = part;
            red->qcount = 2 * n;
            return MPI_SUCCESS;
        }
        red->kernel = kernel_for(op, dt);
        if (red->kernel == NULL)
            return MPI_ERR_OP; /* (every valid pair has one: not reached) */
    } else {
        const user_op *u = user_op_get(op);
        if (u == NULL)
            return MPI_ERR_OP;
        red->user = u->fn;
        commutative = u->commute;
    }
    red->dt = dt;
    red->tsize = t->size;
    switch (t->size) {
    case 1: red->qdt = QUAY_UINT8; break;
    case 2: red->qdt = QUAY_UINT16; break;
    case 4: red->qdt = QUAY_UINT32; break;
    case 8: red->qdt = QUAY_UINT64; break;
    default:
        /* Bytes: an element is several carrier elements, which only the
         * order-preserving algorithms keep together. */
        if (n > SIZE_MAX / t->size)
            return MPI_ERR_COUNT;
        red->qdt = QUAY_UINT8;
        n *= t->size;
        commutative = 0;
        break;
    }
    red->qcount = n;
    red->op = (quay_op){QUAY_OP_USER, commutative, reduction_user_fn, red};
    return MPI_SUCCESS;
}
