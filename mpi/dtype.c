/*
 * dtype.c — the predefined datatypes: size, reduction class and the
 * engine's element type with the same arithmetic, per handle.
 *
 * Datatype handles are 0x4c000000 + a small index (mpi.h); the table is
 * indexed by that offset after a range check, so a forged handle is
 * refused, never used as an index.
 *
 * Reduction classes follow MPI-3.1 §5.9.2, with two lenient extensions
 * (a superset: no valid program is refused):
 *   - MPI_CHAR is a C integer (the standard lists it under no class;
 *     MPICH accepts it for the arithmetic ops too, and programs rely on
 *     that);
 *   - MPI_AINT, MPI_OFFSET and MPI_COUNT (the standard's "multi-language
 *     types": max/min, sum/prod, bitwise) are C integers, so the logical
 *     ops also apply to them.
 * MPI_WCHAR and MPI_PACKED take no predefined op.
 */
#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "qmpi.h"

#define TYPE_BASE 0x4c000000u

/* The engine's integer type of a C integer type of width sizeof(T). */
#define QSINT(T)                                                                           \
    (sizeof(T) == 1   ? QUAY_INT8                                                          \
     : sizeof(T) == 2 ? QUAY_INT16                                                         \
     : sizeof(T) == 4 ? QUAY_INT32                                                         \
                      : QUAY_INT64)
#define QUINT(T)                                                                           \
    (sizeof(T) == 1   ? QUAY_UINT8                                                         \
     : sizeof(T) == 2 ? QUAY_UINT16                                                        \
     : sizeof(T) == 4 ? QUAY_UINT32                                                        \
                      : QUAY_UINT64)

/* QSINT / QUINT cover widths 1, 2, 4 and 8 only. */
#define INT_WIDTH_OK(T) (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8)
_Static_assert(INT_WIDTH_OK(short) && INT_WIDTH_OK(int) && INT_WIDTH_OK(long) &&
                   INT_WIDTH_OK(long long) && INT_WIDTH_OK(intptr_t) && INT_WIDTH_OK(_Bool),
               "a C integer type the engine has no element type for");

/* long double is double on some ABIs: the engine's kernels serve it then. */
#define QLDOUBLE                                                                           \
    (sizeof(long double) == sizeof(double) && LDBL_MANT_DIG == DBL_MANT_DIG ? QUAY_DOUBLE : 0)

/* The MINLOC / MAXLOC pair types are these structs (MPI-3.1 §5.9.4);
 * op.c declares the same ones for its kernels. */
#define PAIR_SIZE(T) sizeof(struct { T v; int i; })

#define T(handle, ctype_size, tc, qt)                                                      \
    [(handle) - TYPE_BASE] = {#handle, (uint32_t)(ctype_size), (tc), (quay_dtype)(qt)}

static const qmpi_type types[] = {
    T(MPI_CHAR, sizeof(char), QMPI_TC_INT, CHAR_MIN < 0 ? QSINT(char) : QUINT(char)),
    T(MPI_SIGNED_CHAR, sizeof(signed char), QMPI_TC_INT, QSINT(signed char)),
    T(MPI_UNSIGNED_CHAR, sizeof(unsigned char), QMPI_TC_INT, QUINT(unsigned char)),
    /* bitwise ops only: the engine's on unsigned bytes are exactly those */
    T(MPI_BYTE, 1, QMPI_TC_BYTE, QUAY_UINT8),
    T(MPI_WCHAR, sizeof(wchar_t), QMPI_TC_NONE, 0),
    T(MPI_SHORT, sizeof(short), QMPI_TC_INT, QSINT(short)),
    T(MPI_UNSIGNED_SHORT, sizeof(unsigned short), QMPI_TC_INT, QUINT(unsigned short)),
    T(MPI_INT, sizeof(int), QMPI_TC_INT, QSINT(int)),
    T(MPI_UNSIGNED, sizeof(unsigned), QMPI_TC_INT, QUINT(unsigned)),
    T(MPI_LONG, sizeof(long), QMPI_TC_INT, QSINT(long)),
    T(MPI_UNSIGNED_LONG, sizeof(unsigned long), QMPI_TC_INT, QUINT(unsigned long)),
    T(MPI_LONG_LONG_INT, sizeof(long long), QMPI_TC_INT, QSINT(long long)),
    T(MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long), QMPI_TC_INT,
      QUINT(unsigned long long)),
    T(MPI_FLOAT, sizeof(float), QMPI_TC_FLOAT, QUAY_FLOAT),
    T(MPI_DOUBLE, sizeof(double), QMPI_TC_FLOAT, QUAY_DOUBLE),
    T(MPI_LONG_DOUBLE, sizeof(long double), QMPI_TC_FLOAT, QLDOUBLE),
    /* logical ops only: the engine's give 0 or 1, a valid _Bool */
    T(MPI_C_BOOL, sizeof(_Bool), QMPI_TC_BOOL, QUINT(_Bool)),
    T(MPI_INT8_T, sizeof(int8_t), QMPI_TC_INT, QUAY_INT8),
    T(MPI_INT16_T, sizeof(int16_t), QMPI_TC_INT, QUAY_INT16),
    T(MPI_INT32_T, sizeof(int32_t), QMPI_TC_INT, QUAY_INT32),
    T(MPI_INT64_T, sizeof(int64_t), QMPI_TC_INT, QUAY_INT64),
    T(MPI_UINT8_T, sizeof(uint8_t), QMPI_TC_INT, QUAY_UINT8),
    T(MPI_UINT16_T, sizeof(uint16_t), QMPI_TC_INT, QUAY_UINT16),
    T(MPI_UINT32_T, sizeof(uint32_t), QMPI_TC_INT, QUAY_UINT32),
    T(MPI_UINT64_T, sizeof(uint64_t), QMPI_TC_INT, QUAY_UINT64),
    T(MPI_AINT, sizeof(MPI_Aint), QMPI_TC_INT, QSINT(MPI_Aint)),
    T(MPI_OFFSET, sizeof(MPI_Offset), QMPI_TC_INT, QSINT(MPI_Offset)),
    T(MPI_COUNT, sizeof(MPI_Count), QMPI_TC_INT, QSINT(MPI_Count)),
    /* sum is component-wise (op.c maps it onto the component type) */
    T(MPI_C_FLOAT_COMPLEX, sizeof(float _Complex), QMPI_TC_COMPLEX, 0),
    T(MPI_C_DOUBLE_COMPLEX, sizeof(double _Complex), QMPI_TC_COMPLEX, 0),
    T(MPI_C_LONG_DOUBLE_COMPLEX, sizeof(long double _Complex), QMPI_TC_COMPLEX, 0),
    T(MPI_PACKED, 1, QMPI_TC_NONE, 0),
    T(MPI_FLOAT_INT, PAIR_SIZE(float), QMPI_TC_PAIR, 0),
    T(MPI_DOUBLE_INT, PAIR_SIZE(double), QMPI_TC_PAIR, 0),
    T(MPI_LONG_INT, PAIR_SIZE(long), QMPI_TC_PAIR, 0),
    T(MPI_2INT, PAIR_SIZE(int), QMPI_TC_PAIR, 0),
    T(MPI_SHORT_INT, PAIR_SIZE(short), QMPI_TC_PAIR, 0),
    T(MPI_LONG_DOUBLE_INT, PAIR_SIZE(long double), QMPI_TC_PAIR, 0),
};

#undef T

const qmpi_type *qmpi_type_get(MPI_Datatype dt)
{
    /* unsigned: a handle below the base wraps to a large index */
    uint32_t i = (uint32_t)dt - TYPE_BASE;
    if (i >= sizeof types / sizeof types[0] || types[i].size == 0)
        return NULL; /* out of range, or MPI_DATATYPE_NULL (index 0) */
    return &types[i];
}

int qmpi_check_buf(const void *buf, int count, MPI_Datatype dt, size_t *bytes)
{
    if (count < 0)
        return MPI_ERR_COUNT;
    const qmpi_type *t = qmpi_type_get(dt);
    if (t == NULL)
        return MPI_ERR_TYPE;
    if (buf == NULL && count > 0)
        return MPI_ERR_BUFFER;
    if (bytes != NULL)
        *bytes = (size_t)count * t->size;
    return MPI_SUCCESS;
}

int MPI_Type_size(MPI_Datatype datatype, int *size)
{
    static const char fn[] = "MPI_Type_size";
    QMPI_ENTER(fn);
    const qmpi_type *t = qmpi_type_get(datatype);
    if (t == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "invalid datatype %#x",
                          (unsigned)datatype);
    if (size == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "size is NULL");
    *size = (int)t->size;
    return MPI_SUCCESS;
}
