/*
 * scn.h — ordering scenarios: parse a scenario (.scn), run it on N quay
 * engines over the adversarial nicsim, check MPI semantics on the result.
 *
 * Used by tests/ordering/test_ordering (CTest driver) and tools/quay-sim.
 * Only include/quay/quay.h and adapters/nicsim/ (nicsim.h, fault_spec.h)
 * are used; nothing here depends on the test harness.
 *
 * The scenario language is described in tests/ordering/README.md.
 */
#ifndef QUAY_SCN_H
#define QUAY_SCN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fault_spec.h"
#include "nicsim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct scn scn;               /* a parsed scenario (immutable) */
typedef struct scn_runner scn_runner; /* run state for one scenario */

/** Parse a scenario file. Returns 0, or -1 with a message in err. */
int scn_parse_file(const char *path, scn **ps, char *err, size_t errlen);
/** Parse from memory; `name` is used in messages. */
int scn_parse_string(const char *name, const char *text, scn **ps, char *err,
                     size_t errlen);
void scn_free(scn *s);
/** Scenario name (file name without directory and .scn). */
const char *scn_name(const scn *s);
int scn_nranks(const scn *s);

/** Create a runner (buffers, payloads) for `s`; `s` must outlive it. */
int scn_runner_new(const scn *s, scn_runner **pr);
void scn_runner_free(scn_runner *r);

/** Per-run options. */
typedef struct scn_opts {
    FILE *trace;        /**< print every event here (NULL: silent) */
    uint64_t max_steps; /**< livelock bound; 0 = automatic */
} scn_opts;

/**
 * Run one interleaving chosen by `seed`. Returns 0 when every check
 * passed, 1 when a check failed (scn_runner_error says which), -1 when
 * the run could not be set up (engine creation failed ...).
 */
int scn_run_seed(scn_runner *r, uint64_t seed, const scn_opts *o);

/**
 * Run one interleaving given by a choice script (see scn_run_exhaustive):
 * at step i the script[i]-th enabled choice is taken, and choice 0 after
 * the script ends. Same return values as scn_run_seed.
 */
int scn_run_script(scn_runner *r, const uint32_t *script, size_t n,
                   const scn_opts *o);

/**
 * Fuzzing: run one interleaving whose choices are read from `bytes`: at
 * each step the next byte (two bytes, big-endian, when there are more
 * than 256 choices) taken modulo the number of enabled choices picks one,
 * numbered as in seeded runs (pulls, timers and, with
 * scn_runner_set_switches, context switches are choices too). When the
 * bytes run out, the seeded chooser of `seed` takes over, and `seed` also
 * seeds everything else a seeded run draws (faults, timeouts, mixed
 * settings). Any byte string is a valid schedule. Same return values as
 * scn_run_seed.
 */
int scn_run_bytes(scn_runner *r, const uint8_t *bytes, size_t n, uint64_t seed,
                  const scn_opts *o);

/**
 * Called with each rank's engine configuration just before the engine is
 * created (the runner has filled it in), e.g. to install allocator hooks;
 * fn = NULL removes it. The hook must keep the configuration valid.
 */
typedef void (*scn_config_fn)(void *ctx, int rank, quay_config *qc);
void scn_runner_set_config_hook(scn_runner *r, scn_config_fn fn, void *ctx);

/** Exhaustive enumeration result. */
typedef struct scn_exh {
    uint64_t runs;      /**< interleavings run */
    int complete;       /**< 1 if the whole tree was enumerated */
    size_t max_depth;   /**< longest choice sequence */
    uint32_t *fail_script; /**< failing run's choices (scn_runner owns) */
    size_t fail_len;
} scn_exh;

/**
 * Depth-first enumeration of every choice sequence (program steps and
 * nicsim events; actions are pulled eagerly), each replayed from scratch,
 * up to `max_runs` runs. Returns 0 (all passed), 1 (a run failed: its
 * script is in ex->fail_script), -1 (set-up error).
 */
int scn_run_exhaustive(scn_runner *r, uint64_t max_runs, scn_exh *ex);

/**
 * Fault injection (nicsim_fault_spec_parse syntax, e.g.
 * "drop:0.01,dup:0.01,corrupt:0.001,delay:0.05"): replace the scenario's
 * own `config faults=` for every later run of `r`; "none" runs without
 * faults, NULL goes back to the scenario's. Ranks in kill / blackhole
 * items must exist in the scenario. Returns 0, or -1 with a message in
 * err.
 */
int scn_runner_set_faults(scn_runner *r, const char *spec, char *err,
                          size_t errlen);
/** The fault spec in force for `r`, as canonical text ("none"). */
void scn_runner_faults_text(const scn_runner *r, char *buf, size_t len);
/** 1 if the runs of `r` inject faults. */
int scn_runner_faults_active(const scn_runner *r);
/**
 * Flow control: "none", "acknack" or "credit" (quay_config.flow). The runs of `r`
 * use `mode` (QUAY_FLOW_*) instead of the scenario's `config flow=`; -1
 * goes back to the scenario's. Under QUAY_FLOW_ACKNACK the runner keeps a
 * virtual clock (SCN_NS_PER_STEP ns per scheduler step), drawn per seed
 * retransmission timeouts, and firing a due timer (quay_on_time) is one
 * more scheduler choice; when nothing else can happen it jumps the clock
 * to the earliest deadline. Packets nicsim corrupted must then be
 * rejected and every other one accepted.
 */
void scn_runner_set_flow(scn_runner *r, int mode);
/** Parse "none" / "acknack" / "credit" into a QUAY_FLOW_* value; 0 or -1. */
int scn_flow_parse(const char *text, int *mode);

/** Rendezvous modes of a run (config rndv=, --rndv). */
enum {
    SCN_RNDV_DEFAULT = 0, /* DATA packets, transport without RDMA */
    SCN_RNDV_COPY,        /* DATA packets, transport with RDMA */
    SCN_RNDV_GET,         /* every rank QUAY_RNDV_GET */
    SCN_RNDV_PUT,         /* every rank QUAY_RNDV_PUT */
    SCN_RNDV_MIXED        /* each rank COPY, GET or PUT, drawn per seed:
                             offers met by receivers that decline them */
};
/**
 * The runs of `r` use rendezvous `mode` (SCN_RNDV_*) instead of the
 * scenario's `config rndv=`; -1 goes back to the scenario's. Every mode
 * but DEFAULT gives the engines QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT and
 * nicsim executes their RDMA actions.
 */
void scn_runner_set_rndv(scn_runner *r, int mode);
/** Receiver-initiated transfers (quay_config.rtr) in the runs of `r`: 1
 *  on (with the RDMA capabilities), 2 on with ANY_SOURCE arbitration
 *  (rtr_any), 0 off, -1 the scenario's `config rtr=`. */
void scn_runner_set_rtr(scn_runner *r, int on);
/** Parse "default" / "copy" / "get" / "put" / "mixed"; 0 or -1. */
int scn_rndv_parse(const char *text, int *mode);
/**
 * Context switches (flow control only): when on, quiescing a rank
 * (quay_channel_quiesce) and resuming a quiesced rank once
 * quay_channel_is_stable says so are scheduler choices too. While a rank is
 * quiesced, a DATA frame with a sequence number it had not used before
 * fails the run. A quiesced rank that never becomes stable because nothing
 * else can happen (its peer refuses until it gets what the quiesced rank
 * holds back) is resumed anyway and counted apart. Before a stable rank
 * resumes, its context is saved, replaced by an empty one with another
 * key, and restored (quay_engine_save / quay_channel_reset /
 * quay_engine_restore); the restored context must save to the same bytes.
 */
void scn_runner_set_switches(scn_runner *r, int on);
/** Completed switches / forced resumes of the last run. */
uint64_t scn_runner_switches(const scn_runner *r, uint64_t *forced);

/** Retransmission timers fired in the last run. */
uint64_t scn_runner_timer_fires(const scn_runner *r);

/** Network counters (drops, dups, ...) of the last run. */
void scn_runner_net_stats(const scn_runner *r, nicsim_stats *st);

/** Message of the last failure ("" if none). */
const char *scn_runner_error(const scn_runner *r);
/** Steps taken by the last run. */
uint64_t scn_runner_steps(const scn_runner *r);
/** 1 if the last run was scripted (scn_run_script) and its script named a
 *  choice that was not there: the script belongs to another scenario or
 *  other options, and the run's failure says nothing about the engines. */
int scn_runner_diverged(const scn_runner *r);

/** What happened in the last run (for coverage reports: which sides of
 *  each race the seeds reached). */
typedef struct scn_outcomes {
    uint32_t matched_unexpected; /**< receives that found their message
                                      waiting (late receive) */
    uint32_t matched_posted;     /**< messages that found their receive
                                      posted (early receive) */
    uint32_t sends_cancelled;    /**< send cancels that won */
    uint32_t sends_cancel_lost;  /**< send cancels that came too late */
    uint32_t recvs_cancelled;
    uint32_t notposted;          /**< ready sends ending ENOTPOSTED */
    uint32_t truncated;          /**< receives ending ETRUNCATE */
    uint64_t deferred;           /**< quay_on_packet answered EAGAIN */
    /* flow control, summed over the engines (quay_stats) */
    uint64_t retransmits;
    uint64_t nacks;              /**< NACKs sent: a receiver short of room */
    uint64_t dups_dropped;
    /* ANY_SOURCE arbitration, summed over the engines (quay_stats) */
    uint64_t any_claimed;        /**< flags that won a wildcard receive */
    uint64_t any_declined;       /**< flags sent back to the envelope path */
    /* collectives */
    uint32_t coll_msgs;          /**< messages matched on collective twins */
    uint64_t switches_refused;   /**< context saves refused (QUAY_EBUSY)
                                      while a collective schedule ran */
    /* quay_send_inline (seeds with bit 1 set) */
    uint32_t sends;              /**< sends posted, inline or not */
    uint32_t inline_sends;       /**< sends quay_send_inline took */
    uint32_t inline_busy;        /**< inline tries answered QUAY_EBUSY
                                      (then posted with quay_isend) */
    uint32_t recv_inlines;       /**< receives quay_recv_inline took */
    uint32_t recv_inline_busy;   /**< its tries answered QUAY_EBUSY (then
                                      posted with quay_irecv) */
    /* QUAY_CFG_SEND_COPY (seeds with bit 3 set) */
    uint32_t copied_sends;       /**< isends complete at the call (copied) */
} scn_outcomes;

void scn_runner_outcomes(const scn_runner *r, scn_outcomes *o);

/** Print what every request of the last run got, one line each
 *  ("rank 1 r1 <- rank 0 tag 3, 10240 bytes, ok"). */
void scn_print_summary(const scn_runner *r, FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_SCN_H */
