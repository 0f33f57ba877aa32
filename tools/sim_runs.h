/*
 * sim_runs.h — one simulated experiment on nicsim's timed mode
 * (adapters/nicsim/timed.h): N ranks, each a host engine and optionally
 * an offload agent in its NIC, running a collective loop, the MCS lock
 * or single remote atomics. Results are simulated time, exact for the
 * model and repeatable bit for bit; only wall_s reads a clock.
 * Any engine or simulator failure is fatal (sim_die).
 */
#ifndef QUAY_TOOLS_SIM_RUNS_H
#define QUAY_TOOLS_SIM_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "timed.h"

enum sim_kind {
    SIM_BARRIER,      /**< back-to-back barriers (with skew: compute U(0, D) before each) */
    SIM_ALLREDUCE,    /**< back-to-back allreduce of one int64 (sum, checked) */
    SIM_SKEWED_BCAST, /**< rounds of: barrier, non-roots compute U(0, D), broadcast */
    SIM_SKEWED_REDUCE /**< the same with a reduce (int64 sum) to rank 0 */
};

/** What to run. Zero is the default for every field but model, n, reps, kind. */
typedef struct sim_coll_spec {
    const nicsim_model *model;
    int n;                /**< ranks */
    int reps;             /**< operations (rounds) */
    enum sim_kind kind;
    int offload;          /**< collectives on NIC agents (coll_offload) */
    uint32_t barrier_alg; /**< QUAY_BARRIER_*; 0: the engine's default */
    uint64_t skew_max;    /**< D in ns; 0: no skew */
    int bypass;           /**< application bypass (coll_bypass) */
    size_t bcast_len;     /**< SIM_SKEWED_BCAST, _REDUCE: bytes */
    uint32_t bcast_alg;   /**< SIM_SKEWED_BCAST: QUAY_BCAST_*; 0: binomial */
    int multi_send;       /**< the transport has QUAY_CAP_MULTI_SEND */
} sim_coll_spec;

typedef struct sim_result {
    double per_op_us;  /**< simulated time per operation */
    double host_us;    /**< host CPU time in the library per operation (rank 1) */
    double host_util;  /**< rank 1's host CPU busy time / elapsed time, 0 .. 1 */
    double inside_us;  /**< mean time inside the call per operation (bcast: non-roots) */
    double wall_s;     /**< wall time of the simulation */
    tsim_stats st;
} sim_result;

sim_result sim_coll_run(const sim_coll_spec *s);

/** MCS lock [NIC ch. 5]: mean us of one acquire + release at rank 1 with
 *  `contenders` ranks competing for a word on rank 0 (1 us critical
 *  section, 2 us between attempts, `cycles` each); atomics on the target
 *  NIC (atomic_host 0) or on a server thread of its host (1). */
double sim_lock_run(const nicsim_model *m, int contenders, int atomic_host, int cycles);

/** One remote atomic (QUAY_ATOMIC_*) at a time from rank 1 to a word on
 *  rank 0, uncontended: mean us from issue to completion over `reps`
 *  operations; the old values are checked. atomic_host as above. */
double sim_atomic_run(const nicsim_model *m, uint32_t op, int atomic_host, int reps);

#endif /* QUAY_TOOLS_SIM_RUNS_H */
