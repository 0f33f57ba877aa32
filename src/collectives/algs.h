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

/* The table, in registry order, and its length. */
extern const coll_alg coll_algs[];
extern const size_t coll_nalgs;

/** alg is QUAY_COLL_AUTO or registered for kind, a quay_offload_kind
 *  (quay_agent_post's check). */
int coll_alg_known(uint32_t kind, uint32_t alg);
/** Algorithm id of kind, or NULL if there is none (AUTO included). */
const coll_alg *coll_alg_find(uint32_t kind, uint32_t id);
/** What runs for a call of kind that asked for alg (AUTO: the decision,
 *  docs/collectives.md), after fallbacks; NULL if alg is neither AUTO nor
 *  registered for kind. */
const coll_alg *coll_alg_decide(uint32_t kind, uint32_t alg, const coll_args *a);
/** Build the schedule of a call: g's builder, or what a call with nothing
 *  to move needs (nothing, or the operand's copy into rbuf). */
void coll_alg_build(const coll_alg *g, coll_sched *s, const coll_args *a);

#endif /* QUAY_COLL_ALGS_H */
