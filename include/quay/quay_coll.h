/*
 * quay_coll.h — collectives on a quay engine: barrier, broadcast, reduce
 * and allreduce, each non-blocking (docs/collectives.md).
 *
 * A collective call builds a schedule, a small graph of steps (send,
 * receive, local reduce, copy) with dependency counts, and returns a
 * request that completes like any other (quay_req_test, COMPLETE action,
 * quay_req_free). Every member of the communicator must make the same
 * collective calls on it in the same order (MPI's rule); calls on
 * different communicators, and several outstanding calls on one, never
 * cross: each schedule's messages travel on the communicator's collective
 * context under its own sequence number. Messages for a collective this
 * rank has not called yet wait as unexpected messages (bounded like any
 * others, under back-pressure) until it does.
 *
 * The blocking forms are the call followed by progress until the request
 * completes.
 */
#ifndef QUAY_COLL_H
#define QUAY_COLL_H

#include <quay/quay.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element types of reductions (fixed width, host byte order). */
typedef enum quay_dtype {
    QUAY_INT8 = 1,
    QUAY_UINT8,
    QUAY_INT16,
    QUAY_UINT16,
    QUAY_INT32,
    QUAY_UINT32,
    QUAY_INT64,
    QUAY_UINT64,
    QUAY_FLOAT,
    QUAY_DOUBLE,
    QUAY_DTYPE_COUNT_
} quay_dtype;

/** Predefined reduction operations (MPI's). SUM and PROD on integers wrap
 *  (two's complement); the bitwise ops and the logical ones (result 0 or
 *  1) are defined on integer types only. */
typedef enum quay_op_kind {
    QUAY_OP_SUM = 1,
    QUAY_OP_PROD,
    QUAY_OP_MIN,
    QUAY_OP_MAX,
    QUAY_OP_BAND,
    QUAY_OP_BOR,
    QUAY_OP_BXOR,
    QUAY_OP_LAND,
    QUAY_OP_LOR,
    QUAY_OP_LXOR,
    /** A user function (quay_op.fn). */
    QUAY_OP_USER,
    QUAY_OP_COUNT_
} quay_op_kind;

/** A user reduction, MPI style: for i < count, inout[i] = in[i] op
 *  inout[i], where `in` holds the operand of the lower ranks. It must not
 *  call into the engine. */
typedef void (*quay_user_fn)(const void *in, void *inout, size_t count, quay_dtype dt,
                             void *ctx);

/** A reduction operation. Predefined: {QUAY_OP_SUM} etc. (other fields
 *  ignored, always commutative). User: {QUAY_OP_USER, commutative, fn,
 *  ctx}; a non-commutative op is applied in rank order, i.e. the result
 *  is x0 op x1 op ... op x(n-1), by an order-preserving algorithm. The
 *  call copies the struct. */
typedef struct quay_op {
    quay_op_kind kind;
    int commutative;
    quay_user_fn fn;
    void *ctx;
} quay_op;

/** Send buffer of quay_ireduce (at the root) and quay_iallreduce: the
 *  input is already in the receive buffer, which the result replaces. */
#define QUAY_IN_PLACE ((const void *)1)

/** Collective algorithms: one enum per operation, the values that
 *  quay_config.coll_barrier, coll_bcast, coll_reduce and coll_allreduce
 *  (and quay_offload.alg) take. QUAY_COLL_AUTO (0) in any of them: the
 *  decision by size and rank count documented in docs/collectives.md.
 *  Values are part of the binary interface: they never change, and a new
 *  algorithm takes the next one (docs/collectives.md, "Adding an
 *  algorithm"). */
enum { QUAY_COLL_AUTO = 0 };

/** Barrier algorithms (quay_config.coll_barrier). */
typedef enum quay_barrier_alg {
    /** Round k, send to rank + 2^k, receive from rank - 2^k (mod n);
     *  ceil(log2 n) rounds for any n. */
    QUAY_BARRIER_DISSEMINATION = 1,
    /** Pairwise exchange with rank XOR 2^k [NIC ch. 3]; ranks past the
     *  largest power of two pair with one inside: floor(log2 n) + 2
     *  steps. */
    QUAY_BARRIER_PAIRWISE = 2,
    /** Gather up a tree of degree coll_tree_degree, broadcast down [NIC
     *  ch. 3 "GB"]. */
    QUAY_BARRIER_TREE = 3,
} quay_barrier_alg;

/** Broadcast algorithms (quay_config.coll_bcast). */
typedef enum quay_bcast_alg {
    /** Binomial tree. */
    QUAY_BCAST_BINOMIAL = 1,
    /** The latency-optimal multicast tree of the postal model [NIC ch. 2]
     *  for lambda = coll_latency_ns / coll_gap_ns. */
    QUAY_BCAST_OPTIMAL_TREE = 2,
    /** Pipelined chain, segment size from the cost model (or
     *  coll_segment). */
    QUAY_BCAST_CHAIN = 3,
    /** Binomial scatter, then ring allgather (van de Geijn). */
    QUAY_BCAST_SCATTER_ALLGATHER = 4,
} quay_bcast_alg;

/** Reduce algorithms (quay_config.coll_reduce). */
typedef enum quay_reduce_alg {
    /** Binomial tree (in rank order for non-commutative ops). */
    QUAY_REDUCE_BINOMIAL = 1,
} quay_reduce_alg;

/** Allreduce algorithms (quay_config.coll_allreduce). */
typedef enum quay_allreduce_alg {
    /** Recursive doubling (any op). */
    QUAY_ALLREDUCE_RECURSIVE_DOUBLING = 1,
    /** Recursive halving reduce-scatter, recursive doubling allgather
     *  (Rabenseifner; commutative ops). */
    QUAY_ALLREDUCE_RABENSEIFNER = 2,
    /** Ring reduce-scatter and allgather (commutative ops). */
    QUAY_ALLREDUCE_RING = 3,
} quay_allreduce_alg;

/** Size in bytes of one element of dt, or 0 if dt is not a quay_dtype. */
QUAY_API size_t quay_dtype_size(quay_dtype dt);

/** 0 if op may reduce elements of type dt, else QUAY_EINVAL. */
QUAY_API int quay_op_check(const quay_op *op, quay_dtype dt);

/** inout[i] = in[i] op inout[i] for i < count (MPI_Reduce_local). */
QUAY_API int quay_reduce_local(const void *in, void *inout, size_t count, quay_dtype dt,
                               const quay_op *op);

/** Non-blocking barrier: completes once every member has called it. */
QUAY_API int quay_ibarrier(quay_engine *e, quay_comm *c, quay_req **req);

/** Non-blocking broadcast of len bytes from root's buf into everyone's
 *  buf (every member passes the same len). */
QUAY_API int quay_ibcast(quay_engine *e, quay_comm *c, void *buf, size_t len, int32_t root,
                         quay_req **req);

/** Non-blocking reduce of count elements to root: root's rbuf = x0 op x1
 *  op ... op x(n-1), where xi is rank i's sbuf. rbuf matters only at the
 *  root; sbuf may be QUAY_IN_PLACE there. */
QUAY_API int quay_ireduce(quay_engine *e, quay_comm *c, const void *sbuf, void *rbuf,
                          size_t count, quay_dtype dt, const quay_op *op, int32_t root,
                          quay_req **req);

/** Non-blocking allreduce: every member's rbuf gets the reduction of all
 *  sbufs; sbuf may be QUAY_IN_PLACE. */
QUAY_API int quay_iallreduce(quay_engine *e, quay_comm *c, const void *sbuf, void *rbuf,
                             size_t count, quay_dtype dt, const quay_op *op, quay_req **req);

/* ------------------------------------------------------------------ */
/* A distributed queue lock on remote atomics [NIC ch. 5]               */
/* ------------------------------------------------------------------ */

/** Where a member's lock record lives: its registered memory (16 bytes,
 *  QUAY_MEM_READ | QUAY_MEM_WRITE) as it published it. */
typedef struct quay_lock_rec {
    uint64_t key;
    uint64_t offset;
} quay_lock_rec;

/** One member's handle of an MCS queue lock (lock.c has the protocol).
 *  The lock word (8 bytes, zero at the start) lives in the registered
 *  memory of rank `home`; every member has a 16-byte record in its own
 *  registered memory. Waiting never sends anything: it reads the local
 *  record, which the predecessor writes. Fields are private. */
typedef struct quay_lock {
    quay_engine *e;
    int32_t me, home, peer;
    uint64_t lock_key, lock_off;
    const quay_lock_rec *recs;
    void *mine;
    int state;
    quay_req *op;
    uint64_t result, val;
} quay_lock;

/** Set up l for engine e: the lock word at (home, lock_key, lock_off),
 *  recs[world rank] the members' records, `mine` this rank's record
 *  (local memory, inside its registered region recs[my rank]). */
QUAY_API int quay_lock_init(quay_lock *l, quay_engine *e, int32_t home, uint64_t lock_key,
                            uint64_t lock_off, const quay_lock_rec *recs, void *mine);
/** Start acquiring (from idle): 0, QUAY_EBUSY, or a quay_iatomic error. */
QUAY_API int quay_lock_acquire(quay_lock *l);
/** Start releasing (from held): 0, QUAY_EBUSY, or an iput/iatomic error. */
QUAY_API int quay_lock_release(quay_lock *l);
/** Advance after engine progress: 1 when the acquire (now held) or the
 *  release (now free) has finished, 0 while it goes on, < 0 if a remote
 *  operation failed (the lock is then unusable for this member). */
QUAY_API int quay_lock_test(quay_lock *l);

/* ------------------------------------------------------------------ */
/* Offload to a NIC agent                                               */
/* ------------------------------------------------------------------ */

/** What an offloaded collective is. */
typedef enum quay_offload_kind {
    QUAY_OFF_BARRIER = 1,
    QUAY_OFF_BCAST,
    QUAY_OFF_REDUCE,
    QUAY_OFF_ALLREDUCE,
} quay_offload_kind;

/** The name of algorithm `alg` of operation `kind` (a quay_offload_kind:
 *  QUAY_OFF_BARRIER takes a quay_barrier_alg, ...), e.g. "ring" for
 *  (QUAY_OFF_ALLREDUCE, QUAY_ALLREDUCE_RING): the enum value's name in
 *  lower case; "auto" for QUAY_COLL_AUTO. NULL if this library has no
 *  such algorithm for that operation (quay_engine_new refuses it in
 *  quay_config, quay_agent_post in a quay_offload). */
QUAY_API const char *quay_coll_alg_name(uint32_t kind, uint32_t alg);

/** An offloaded collective, as the host hands it to its NIC (the
 *  QUAY_ACT_OFFLOAD action). Buffers are host memory that the NIC reads
 *  and writes directly (DMA); the agent uses them until it reports done. */
typedef struct quay_offload {
    quay_offload_kind kind;
    uint32_t ctx;         /**< the communicator's context id */
    int32_t size;         /**< its size */
    const int32_t *world; /**< comm rank -> world rank (size entries) */
    int32_t root;         /**< bcast / reduce */
    const void *sbuf;     /**< reduce / allreduce operand (or QUAY_IN_PLACE) */
    void *rbuf;           /**< bcast buffer; reduce / allreduce result */
    size_t count;         /**< bcast: bytes; reductions: elements */
    quay_dtype dt;
    quay_op op;
    uint32_t alg;         /**< the host's algorithm choice, of kind's enum
                               (quay_barrier_alg, ...; 0: automatic) */
    uint64_t cookie;      /**< returned in QUAY_ACT_OFFLOAD_DONE */
} quay_offload;

/** Run an offloaded collective on agent engine `agent` (the engine that
 *  models rank's NIC processor; its peers are the other ranks' agents).
 *  The agent keeps a communicator per context id (created at the first
 *  post for it) and runs the same schedules as a host would, without any
 *  host involvement, then emits QUAY_ACT_OFFLOAD_DONE. The descriptor is
 *  copied (the world map is copied at the communicator's creation).
 *  0, QUAY_EINVAL, QUAY_EAGAIN (coll_max schedules running, or a new
 *  context id while the agent already keeps max_comms communicators). */
QUAY_API int quay_agent_post(quay_engine *agent, const quay_offload *d);

/** Host engine: the agent finished the offloaded collective `cookie`
 *  with `status`; its request completes. 0 or QUAY_ESTATE (no such
 *  offloaded collective). */
QUAY_API int quay_on_offload_done(quay_engine *host, uint64_t cookie, int status);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_COLL_H */
