/*
 * algs.h — the collective algorithms' registry (internal to
 * src/collectives): one line per algorithm, the only list of them. The
 * table (algs.c), the builders' prototypes (below), the config check and
 * quay_coll_alg_name all come from it, so an algorithm is its builder,
 * its line here and its value in quay_coll.h's enum of its operation
 * (docs/collectives.md, "Adding an algorithm").
 */
#ifndef QUAY_COLL_ALGS_H
#define QUAY_COLL_ALGS_H

#include "collectives/coll.h"

/* What a collective call asks for, beyond the schedule: all that the
 * decision and a builder may read (the schedule holds rank, size, op and
 * element size too; the config is the engine's). */
typedef struct coll_args {
    size_t count;        /* bcast: bytes; reduce, allreduce: elements */
    size_t esize;        /* element size (reductions), else 0 */
    int32_t size;        /* communicator size */
    int32_t root;        /* bcast, reduce */
    uint32_t degree;     /* the barrier tree's: coll_tree_degree */
    uint32_t dt;         /* reductions: the quay_dtype, else 0 */
    uint8_t in_place;    /* reduce, allreduce: the operand is in rbuf */
    uint8_t commutative; /* reduce, allreduce */
} coll_args;

/* Builds one member's schedule of a call that has something to move: at
 * least two members, and count > 0 where there is a count (algs.c builds
 * the other calls itself). */
typedef void coll_build_fn(coll_sched *s, const coll_args *a);
/* Whether this call can run the algorithm (sub-tags enough, a
 * commutative op); when not, its fallback runs. */
typedef int coll_usable_fn(const coll_args *a);

typedef struct coll_alg {
    uint32_t kind;           /* QUAY_OFF_* */
    uint32_t id;             /* its value in the kind's enum (quay_coll.h) */
    const char *name;        /* the value's name in lower case */
    coll_build_fn *build;
    coll_usable_fn *usable;
    uint32_t fallback;       /* an id of the same kind, when !usable */
} coll_alg;

/* Always usable. */
coll_usable_fn coll_usable_any;

/* The registry: X(kind, id, name, builder, usable, fallback). The builder
 * and usable functions live in the algorithm's file (coll_usable_any
 * here); a fallback chain must end at an always-usable algorithm. */
#define COLL_ALGS(X)                                                                          \
    X(QUAY_OFF_BARRIER, QUAY_BARRIER_DISSEMINATION, "dissemination",                          \
      coll_barrier_dissemination, coll_usable_any, 0)                                         \
    X(QUAY_OFF_BARRIER, QUAY_BARRIER_PAIRWISE, "pairwise", coll_barrier_pairwise,             \
      coll_usable_any, 0)                                                                     \
    X(QUAY_OFF_BARRIER, QUAY_BARRIER_TREE, "tree", coll_barrier_tree, coll_usable_any, 0)     \
    X(QUAY_OFF_BCAST, QUAY_BCAST_BINOMIAL, "binomial", coll_bcast_binomial, coll_usable_any,  \
      0)                                                                                      \
    X(QUAY_OFF_BCAST, QUAY_BCAST_OPTIMAL_TREE, "optimal_tree", coll_bcast_optimal_tree,       \
      coll_usable_any, 0)                                                                     \
    X(QUAY_OFF_BCAST, QUAY_BCAST_CHAIN, "chain", coll_bcast_chain, coll_usable_any, 0)        \
    X(QUAY_OFF_BCAST, QUAY_BCAST_SCATTER_ALLGATHER, "scatter_allgather",                      \
      coll_bcast_scatter_allgather, coll_bcast_scatter_allgather_usable, QUAY_BCAST_BINOMIAL) \
    X(QUAY_OFF_REDUCE, QUAY_REDUCE_BINOMIAL, "binomial", coll_reduce_binomial,                \
      coll_usable_any, 0)                                                                     \
    X(QUAY_OFF_ALLREDUCE, QUAY_ALLREDUCE_RECURSIVE_DOUBLING, "recursive_doubling",            \
      coll_allreduce_recursive_doubling, coll_usable_any, 0)                                  \
    X(QUAY_OFF_ALLREDUCE, QUAY_ALLREDUCE_RABENSEIFNER, "rabenseifner",                        \
      coll_allreduce_rabenseifner, coll_allreduce_rabenseifner_usable,                        \
      QUAY_ALLREDUCE_RECURSIVE_DOUBLING)                                                      \
    X(QUAY_OFF_ALLREDUCE, QUAY_ALLREDUCE_RING, "ring", coll_allreduce_ring,                   \
      coll_allreduce_ring_usable, QUAY_ALLREDUCE_RABENSEIFNER)

/* Every builder's and usable function's prototype. */
#define COLL_ALG_DECLARE(kind, id, name, build, usable, fallback)                             \
    coll_build_fn build;                                                                      \
    coll_usable_fn usable;
COLL_ALGS(COLL_ALG_DECLARE)
#undef COLL_ALG_DECLARE

/* ---- operations ------------------------------------------------------------------ */

/* One collective operation, defined in its own file beside its call
 * (bcast.c: quay_ibcast and coll_op_bcast) and its algorithms. The
 * generic parts (coll.c's launch, offload.c's agent post, the config
 * check) reach it only through this. */
typedef struct coll_op {
    uint32_t kind;    /* QUAY_OFF_* */
    const char *name; /* the call's name without its "quay_i" */
    /** The algorithm the config asks for (its field of quay_config;
     *  never NULL). */
    uint32_t (*configured)(const quay_config *c);
    /* Each hook below may be NULL: nothing to do. */
    /** quay_agent_post: d's fields that only this operation has (kind,
     *  alg, size, world and ctx are checked before): 0, QUAY_EINVAL or
     *  QUAY_ERANK. */
    int (*check)(const quay_engine *e, const quay_offload *d);
    /** What the decision and the builders read from d: root, dt, esize,
     *  in_place, commutative (count, size and degree are set before). */
    void (*args)(const quay_offload *d, coll_args *a);
    /** Where the schedule finds its buffers (and its reduction). */
    void (*bind)(coll_sched *s, const quay_offload *d, const coll_args *a);
    /** The automatic choice (QUAY_COLL_AUTO); fallbacks apply after it
     *  (never NULL). */
    uint32_t (*choose)(const coll_args *a);
    /** A call with nothing to move (one member, or count 0 when
     *  `counted`): what it must do anyway. */
    void (*trivial)(coll_sched *s, const coll_args *a);
    uint8_t counted;  /* count 0 moves nothing (not so for a barrier) */
} coll_op;

/* The operations: X(descriptor), one line each, defined in the
 * operation's file. */
#define COLL_OPS(X) X(coll_op_barrier) X(coll_op_bcast) X(coll_op_reduce) X(coll_op_allreduce)

#define COLL_OP_DECLARE(op) extern const coll_op op;
COLL_OPS(COLL_OP_DECLARE)
#undef COLL_OP_DECLARE

/** The operation of kind (a quay_offload_kind), or NULL. */
const coll_op *coll_op_find(uint32_t kind);

/* ---- what the operations' files share (coll.c) ------------------------------------- */

/** A call's common checks: e, req and the communicator (*req = NULL). */
int coll_call_args(quay_engine *e, quay_comm *c, quay_req **req);
/** Checks shared by the reductions: the op, the buffers, the count. */
int coll_reduce_args(quay_engine *e, quay_comm *c, const void *sbuf, const void *rbuf,
                     size_t count, quay_dtype dt, const quay_op *op, int need_rbuf,
                     quay_req **req);
/** quay_agent_post's check of a reduction's operand (its op is the
 *  caller's to check first): need_rbuf where the result lands on this
 *  member. */
int coll_reduce_post_check(const quay_offload *d, int need_rbuf);
/** Post a call of operation op on c, d holding its arguments (its kind
 *  and algorithm are filled in here, the algorithm from the config): run
 *  it here, or hand it to the NIC agent. */
int coll_call(quay_engine *e, quay_comm *c, const coll_op *op, quay_offload *d,
              quay_req **req);
/** Build and start collective d of operation op on c (offloaded: an
 *  agent's schedule). */
int coll_launch(quay_engine *e, quay_comm *c, const coll_op *op, const quay_offload *d,
                int offloaded, quay_req **req);
/** coll_args for a reduction: dt, esize, in_place, commutative. */
void coll_reduce_fill_args(const quay_offload *d, coll_args *a);
/** The schedule's buffers and reduction, for a reduction. */
void coll_reduce_bind(coll_sched *s, const quay_offload *d, const coll_args *a);
/** A reduction with nothing to move: the operand still lands in the
 *  result buffer where there is one. */
void coll_reduce_trivial(coll_sched *s, const coll_args *a);

/* ---- algorithms ------------------------------------------------------------------ */

/* The table, in registry order, and its length. */
extern const coll_alg coll_algs[];
extern const size_t coll_nalgs;

/** alg is QUAY_COLL_AUTO or registered for kind, a quay_offload_kind
 *  (quay_agent_post's check). */
int coll_alg_known(uint32_t kind, uint32_t alg);
/** Algorithm id of kind, or NULL if there is none (AUTO included). */
const coll_alg *coll_alg_find(uint32_t kind, uint32_t id);
/** What runs for a call of operation op that asked for alg (AUTO: the
 *  decision, docs/collectives.md), after fallbacks; NULL if alg is
 *  neither AUTO nor registered for op. */
const coll_alg *coll_alg_decide(const coll_op *op, uint32_t alg, const coll_args *a);
/** Build the schedule of a call of op: g's builder, or what a call with
 *  nothing to move needs (op->trivial). */
void coll_alg_build(const coll_op *op, const coll_alg *g, coll_sched *s, const coll_args *a);

#endif /* QUAY_COLL_ALGS_H */
