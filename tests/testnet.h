/*
 * testnet.h — a deterministic network double for unit tests: N engines,
 * FIFO links, packets copied out of SEND actions into queues and handed to
 * quay_on_packet when the test says so. Unit tests use it to drive exact
 * sequences; the adversarial ordering tests use adapters/nicsim instead.
 */
#ifndef QUAY_TESTNET_H
#define QUAY_TESTNET_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay.h>

#define TN_MAX_RANKS 8
#define TN_MAX_PKTS 4096

typedef struct tn_pkt {
    int32_t from, to;
    size_t len;
    uint8_t *bytes;
    uint64_t token;   /* sender's token, completed when the test decides */
    int done;         /* op_done already given */
    /* RDMA_PUT / RDMA_GET (kind != 0): executed against the target's
     * registered memory when delivered, op_done then (never lost or
     * duplicated: RDMA transports are reliable). PUT data is copied at
     * pull time into bytes. */
    int rdma;         /* 0, QUAY_ACT_RDMA_PUT or QUAY_ACT_RDMA_GET */
    uint64_t key, off;
    void *local;
} tn_pkt;

typedef struct testnet {
    int n;
    quay_engine *e[TN_MAX_RANKS];
    quay_comm *world[TN_MAX_RANKS];
    tn_pkt q[TN_MAX_PKTS]; /* in flight, in emission order */
    int nq;
    int auto_done;         /* give op_done as soon as a SEND is pulled */
    int keep_eagain;       /* a packet refused with EAGAIN stays in flight
                              (moved to the end), else it is dropped */
    int ncomplete[TN_MAX_RANKS];
    int rejects;
    int last_rc;
} testnet;

/** Default config for rank r of n (small thresholds, oracle checking). */
void tn_config(quay_config *cfg, int r, int n);
/** Create n engines (cfg may be NULL for tn_config) with world comms. */
int tn_init(testnet *t, int n, const quay_config *cfg);
/** The same with one config per rank when per_rank (cfg[0..n)), else
 *  cfg[0] for all; rank and nranks are set by tn_init_each. */
int tn_init_each(testnet *t, int n, const quay_config *cfg, int per_rank);
void tn_fini(testnet *t);
/** Pull every action of rank r into the network; returns SENDs pulled. */
int tn_pull(testnet *t, int r);
/** Pull from all ranks. */
int tn_pull_all(testnet *t);
/** Deliver in-flight packet i (removing it, unless keep_eagain and the
 *  engine answered EAGAIN); returns quay_on_packet's rc. */
int tn_deliver(testnet *t, int i);
/** Lose in-flight packet i (the wire took it: op_done was or will be given). */
void tn_drop(testnet *t, int i);
/** Queue a copy of in-flight packet i (a duplicate on the wire). */
void tn_dup(testnet *t, int i);
/** Give op_done for every pulled SEND that has not had it. */
void tn_done_all(testnet *t);
/** Pull and deliver in FIFO order until nothing moves; returns steps. */
int tn_pump(testnet *t);
/** Advance *now to the earliest deadline of any engine (if later) and
 *  run quay_on_time on every engine. Returns 0 when no engine has one. */
int tn_tick(testnet *t, uint64_t *now);
/** Pump, running timers (tn_tick) whenever the network is quiet, until no
 *  deadline is left or `rounds` rounds; then pump once more so that what
 *  the last timers owed (pings, retransmissions) goes out. */
void tn_settle(testnet *t, uint64_t *now, int rounds);
/** Index of the first in-flight packet of type `pkt` (or any if 0), or -1. */
int tn_find(const testnet *t, int pkt);
/** Type of in-flight packet i (TN_RDMA for an RDMA operation). */
#define TN_RDMA 0x40
int tn_type(const testnet *t, int i);

/** Seeded xorshift: a number in [0, n) (n > 0), advancing *state. */
uint32_t tn_rnd(uint64_t *state, uint32_t n);
/** One lossy network step: pull everything, then deliver, lose
 *  (loss_pct %) or duplicate (loss_pct %) one packet, picked among the
 *  first four in flight (near-FIFO) or, one time in `wide` (0: never),
 *  anywhere (a long delay). Randomness from *rng. */
void tn_lossy_step(testnet *t, uint64_t *rng, int loss_pct, uint32_t wide);

/** One check that every rank holds nothing: no request, message
 *  descriptor, outgoing descriptor, unexpected byte, held packet or
 *  queued control reply (rejected packets are the caller's to check). */
void tn_check_clean(const testnet *t);
/** Outgoing descriptors engine e holds (quay_stats.outs_in_use). */
uint32_t tn_outs_in_use(quay_engine *e);
/** Deterministic payload: byte i of buffer `seed`. */
void tn_fill(uint8_t *b, size_t n, int seed);
/** 1 if r is complete (status in *st when st != NULL). */
int tn_done(const quay_req *r, quay_status *st);
/** 1 if r completed without error, not cancelled, with `len` bytes. */
int tn_good(const quay_req *r, uint64_t len);

#endif
