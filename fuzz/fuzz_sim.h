/*
 * fuzz_sim.h — the input language of fuzz_sim (N engines on nicsim),
 * shared with the seed generator. fuzz/README.md documents it with
 * examples; this is the reference.
 *
 * Input = SIM_HDR header bytes, then h5 % (SIM_MAX_MOTIFS + 1) motif
 * records of SIM_REC bytes, then the schedule: every remaining byte (at
 * most SIM_MAX_SCHED) picks one scheduler choice (scn_run_bytes: the byte
 * modulo the number of enabled choices; two bytes when there are more
 * than 256), and when they run out the seeded scheduler of the seed
 * (h6, h7) takes over. Missing bytes read as 0.
 *
 * Header:
 *   h0  ranks 2 + h0 % 7
 *   h1  bits 0-1 flow control (0 none, 1 ACK/NACK, 2 credit, 3 none);
 *       bit 2 context switches (with flow control); bits 3-5 rendezvous
 *       (0 default, 1 copy, 2 get, 3 put, 4 mixed per rank, else default);
 *       bits 6-7 receiver-initiated (1 rtr, 2 rtr + ANY_SOURCE
 *       arbitration, else off)
 *   h2  faults: bit 0 delay, 1 reorder, 2 stall, and with flow control
 *       3 drop, 4 duplicate, 5 corrupt; bits 6-7 probability (1, 2, 5,
 *       10 %)
 *   h3  bits 0-1 eager_max (64, 256, 32, 1024); bits 2-3 frag_size (32,
 *       128, 16, 64); bits 4-5 pipeline depth (1, 2, 4, 8); bit 6 FIFO
 *       links (no reordering by the network itself; not with tight
 *       bounds and no flow control); bit 7 tight bounds (few
 *       descriptors, out slots, control slots, a small unexpected budget;
 *       programs then have no blocking point before the final waitall:
 *       no probe, no sync, no coll_max 1)
 *   h4  bits 0-2 collective algorithms (0 automatic, 1 mixed per seed,
 *       2-7 fixed sets); bits 3-4 application bypass (1 on, 2 mixed);
 *       bit 5 coll_max 1 (not with tight bounds, nor with bypass unless
 *       bit 6 is set too: a known engine deadlock, see sim_gen.c)
 *   h5  number of motifs
 *   h6, h7  seed (little-endian)
 *
 * Motif record: kind, a, b, c, d, e (kind % SIM_NKINDS; the rest are
 * parameters, sim_gen.c). Each motif is a deadlock-free fragment of
 * program on its own tags (and communicators when it needs ANY_TAG), so
 * any sequence of them is a valid scenario: every failure of a run is a
 * protocol bug, not a harness artefact.
 */
#ifndef QUAY_FUZZ_SIM_H
#define QUAY_FUZZ_SIM_H

#include <stddef.h>
#include <stdint.h>

#define SIM_HDR 8
#define SIM_REC 6
#define SIM_MAX_MOTIFS 16
#define SIM_MAX_SCHED 4096

enum sim_kind {
    SIM_P2P = 0,     /* a: sender, b: receiver (equal: self), c: count 1-3 |
                        comm << 2 | pattern << 4 (specific, ANY_SOURCE,
                        mixed, ANY_TAG) | truncate << 6 | free early << 7,
                        d: sizes, e: modes (2 bits per message: std, sync,
                        ready, buffered) */
    SIM_WILDCARD,    /* a: receiver, b: senders mask, c: per-sender count
                        bits, d: comm | ANY_TAG << 2 | truncate << 3, e:
                        sizes; every receive ANY_SOURCE */
    SIM_PROBE,       /* a: sender, b: receiver, c: count | style << 1
                        (probe, mprobe, iprobe, probe+mprobe) | any << 3 |
                        comm << 4, d: sizes, e: modes */
    SIM_CANCEL_RECV, /* a: sender, b: receiver, c: variant (unmatched,
                        race eager, race rendezvous), d: size */
    SIM_CANCEL_SEND, /* a: sender, b: receiver, c: sync mode | late receive
                        << 1, d: size of the cancelled send, e: of the
                        second */
    SIM_COLL,        /* a: kind (barrier, bcast, reduce, allreduce), b:
                        subcomm | dtype << 1 | op << 5, c: members mask |
                        in place << 7, d: root | free early << 4, e: size */
    SIM_COMM_LATE,   /* a: receiver, b: sender, c: count | late (after a
                        sync) << 1 | ANY_TAG << 2, d: sizes */
    SIM_PROC_NULL,   /* a: rank, d: size */
    SIM_STREAM,      /* a: sender, b: receiver, c: count 3-6 | ANY_SOURCE
                        mask << 2, d: sizes, e: sync mask */
    SIM_RING,        /* a: stride, b: modes, d: size */
    SIM_SYNC,        /* a runner-level barrier (no engine traffic) */
    SIM_NKINDS
};

/** A generated program: scenario text, schedule, seed, switches. */
typedef struct sim_prog {
    char *text;          /* the scenario (tests/ordering language) */
    const uint8_t *sched;/* schedule bytes (into the input) */
    size_t nsched;
    uint64_t seed;
    int switches;        /* context switches as scheduler choices */
    int nranks;
} sim_prog;

/** Build the program of input data[0..size). 0, or -1 out of memory. */
int sim_generate(const uint8_t *data, size_t size, sim_prog *p);
void sim_prog_free(sim_prog *p);

#endif /* QUAY_FUZZ_SIM_H */
