/*
 * ops.h — reduction kernels for the collectives: element sizes, which
 * (operation, type) pairs are valid, and the local reduction
 * inout[i] = in[i] op inout[i].
 *
 * Pure functions: no engine state, no allocation. Buffers may be
 * unaligned (a reduction often works on a slice of a packet); elements
 * are loaded and stored with memcpy of the element size.
 */
#ifndef QUAY_COLLECTIVES_OPS_H
#define QUAY_COLLECTIVES_OPS_H

#include <stddef.h>

#include <quay/quay_coll.h>

/** Size in bytes of one element of dt (1, 1, 2, 2, 4, 4, 8, 8, 4, 8 in
 *  quay_dtype order); 0 if dt is not a quay_dtype. */
size_t op_dtype_size(quay_dtype dt);

/** 0 if op may reduce elements of type dt, else QUAY_EINVAL (NULL op,
 *  unknown kind or type, a bitwise or logical op on FLOAT/DOUBLE, a USER
 *  op without fn). */
int op_check(const quay_op *op, quay_dtype dt);

/** 1 if the operands of op may be reordered: always for predefined ops,
 *  as declared (op->commutative != 0) for USER ops. */
int op_commutative(const quay_op *op);

/** inout[i] = in[i] op inout[i] for i < count. Precondition: op_check(op,
 *  dt) == 0. in may equal inout but must not overlap it otherwise. A USER
 *  op's fn is called once for the whole range (not at all when count is
 *  0, so it never sees the NULL buffers a zero count allows). */
void op_apply(const quay_op *op, quay_dtype dt, const void *in, void *inout,
              size_t count);

#endif /* QUAY_COLLECTIVES_OPS_H */
