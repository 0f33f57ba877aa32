/*
 * qrt_optab.h — the initiator's table of remote-memory actions in flight,
 * for transports that move RDMA data in software (shm, TCP).
 *
 * A slot is named on the wire by a cookie, (generation << 32 | index): the
 * request carries it, the target's reply brings it back, and a reply for
 * a slot that has since been freed and reused (its generation moved on),
 * or that names another peer's action, is recognised and refused. The
 * table grows by doubling and never shrinks while the transport lives.
 */
#ifndef QRT_OPTAB_H
#define QRT_OPTAB_H

#include <stdint.h>

typedef struct qrt_op {
    uint64_t token; /* the engine's, for op_done */
    void *local;    /* this rank's memory: GET's target, PUT's source, an atomic's old value */
    uint64_t len;   /* bytes */
    int32_t peer;   /* the target */
    uint32_t gen;   /* in the cookie */
    uint32_t next;  /* free list */
    int32_t status; /* the transport's (shm: its own share of a split copy) */
    uint8_t used;
    uint8_t kind;   /* the transport's (what the action is, or the reply it expects) */
    uint8_t split;  /* the transport's (shm: the target split the copy) */
    uint8_t held;   /* the transport's: its request waits, unsent (depth) */
} qrt_op;

typedef struct qrt_optab {
    qrt_op *ops;
    uint32_t nops;
    uint32_t free; /* head of the free list; UINT32_MAX: none */
} qrt_optab;

/** An empty table. */
void qrt_optab_init(qrt_optab *t);
/** Release it (every slot is forgotten). */
void qrt_optab_fini(qrt_optab *t);
/** A free slot, zeroed but for its generation, which moves on: 0 and
 *  *idx, or QUAY_ENOMEM (no memory, or 2^32 slots). */
int qrt_op_alloc(qrt_optab *t, uint32_t *idx);
/** Return slot idx to the free list. */
void qrt_op_free(qrt_optab *t, uint32_t idx);
/** The cookie naming slot idx on the wire. */
uint64_t qrt_op_cookie(const qrt_optab *t, uint32_t idx);
/** The slot in use for `peer` that `cookie` names, or NULL (out of range,
 *  free, reused since, another peer's). */
qrt_op *qrt_op_find(qrt_optab *t, uint64_t cookie, int32_t peer);

#endif /* QRT_OPTAB_H */
