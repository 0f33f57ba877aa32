/*
 * shm_seg.h — the shared segment of one shm job: its layout, creation (by
 * quayrun) and attachment (by each rank).
 *
 * quayrun makes the segment with memfd_create, so it has no name to leak:
 * it lives while quayrun or any rank has it mapped or open, and vanishes
 * with the last of them, however they end. Children inherit the fd
 * (QUAY_SHM_FD) and map it at start-up.
 *
 *   header                  one cache line of geometry, then the start-up
 *                           barriers, the probe verdict and the exit epoch
 *   slot[n]                 per rank: its doorbell (futex word), pid, state
 *   pair[src * n + dst]     per ordered pair src -> dst (src != dst):
 *                             pkt ring control, ctl ring control,
 *                             pkt ring data (ring_bytes),
 *                             ctl ring data (ctl_bytes)
 *
 * Every shared word is a C11 atomic (lock-free, so it works across
 * processes). Pages of unused rings are never touched, so memory is spent
 * only on pairs that talk.
 */
#ifndef QUAY_SHM_SEG_H
#define QUAY_SHM_SEG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define QSHM_MAGIC 0x316d687379617571ull /* "quayshm1" */
#define QSHM_VERSION 1u
#define QSHM_LINE 64u

/** Slot states. */
enum {
    QSHM_SLOT_EMPTY = 0,    /**< the rank has not attached yet */
    QSHM_SLOT_ATTACHED = 1, /**< pid and probe address are valid */
    QSHM_SLOT_EXITED = 2    /**< quayrun reaped the process */
};

typedef struct qshm_header {
    uint64_t magic;
    uint32_t version;
    uint32_t nranks;
    uint64_t ring_bytes;  /**< pkt ring data bytes (power of two) */
    uint64_t ctl_bytes;   /**< ctl ring data bytes (power of two) */
    uint64_t total_bytes; /**< the whole segment */
    uint64_t slots_off;   /**< offset of slot[0] */
    uint64_t pairs_off;   /**< offset of pair[0] */
    uint64_t pair_bytes;  /**< stride of pair[] */
    /** Start-up barriers: ranks that arrived at barrier k. */
    _Alignas(64) _Atomic uint32_t arrived[2];
    /** 1 until a rank's single-copy probe fails (then 0 for everyone). */
    _Atomic uint32_t rdma_ok;
    /** errno of the first failed probe (0: single copy was turned off). */
    _Atomic int32_t rdma_errno;
    /** Bumped by quayrun each time it reaps a rank (whose slot it marks
     *  QSHM_SLOT_EXITED first): ranks recheck their peers when it moves. */
    _Atomic uint32_t epoch;
} qshm_header;

typedef struct qshm_slot {
    /** Futex word, bumped after every frame sent toward this rank. */
    _Atomic uint32_t doorbell;
    /** 1 while this rank may be asleep on `doorbell` (senders wake it). */
    _Atomic uint32_t sleeping;
    _Atomic int32_t pid;
    _Atomic uint32_t state; /**< QSHM_SLOT_* */
    /** Address of a known word in this rank's memory (the probe reads it). */
    _Atomic uint64_t probe_addr;
} qshm_slot;

/** Control words of one ring, each on its own cache line. */
typedef struct qshm_ring_ctl {
    _Alignas(64) _Atomic uint64_t head; /**< bytes published by the producer */
    _Alignas(64) _Atomic uint64_t tail; /**< bytes released by the consumer */
    /** The producer has frames waiting for room: the consumer rings the
     *  producer's doorbell after releasing some. */
    _Alignas(64) _Atomic uint32_t want_space;
} qshm_ring_ctl;

/** A mapped segment. */
typedef struct qshm_seg {
    void *base;
    size_t len;
    qshm_header *hdr;
} qshm_seg;

/**
 * Create a segment for `nranks` ranks (quayrun): memfd, size, map,
 * header. Ring sizes are rounded up to powers of two. *fd is the memfd
 * (close-on-exec; the caller clears that for its children). 0 or -errno.
 */
int qshm_seg_create(uint32_t nranks, uint64_t ring_bytes, uint64_t ctl_bytes, qshm_seg *seg,
                    int *fd);

/** Map the segment behind `fd` and check its header against `nranks`.
 *  0, or -EINVAL (not a quay segment / wrong size), or -errno. */
int qshm_seg_attach(int fd, uint32_t nranks, qshm_seg *seg);

void qshm_seg_detach(qshm_seg *seg);

/** Populate rank's pair blocks (the rings it writes and reads) in its
 *  mapping, if they take at most `limit` bytes: the memfd's pages are
 *  otherwise allocated and mapped at their first message, a fault per
 *  page during the first pass over each ring. Best effort (Linux 5.14's
 *  MADV_POPULATE_WRITE; nothing without it). */
void qshm_seg_prefault(const qshm_seg *seg, uint32_t rank, uint64_t limit);

qshm_slot *qshm_seg_slot(const qshm_seg *seg, uint32_t rank);

/** The rings src -> dst: control and data of the pkt and ctl rings. */
qshm_ring_ctl *qshm_seg_pkt_ctl(const qshm_seg *seg, uint32_t src, uint32_t dst);
qshm_ring_ctl *qshm_seg_ctl_ctl(const qshm_seg *seg, uint32_t src, uint32_t dst);
uint8_t *qshm_seg_pkt_data(const qshm_seg *seg, uint32_t src, uint32_t dst);
uint8_t *qshm_seg_ctl_data(const qshm_seg *seg, uint32_t src, uint32_t dst);

/** quayrun reaped `rank`: mark its slot exited, move the epoch and wake
 *  every rank (doorbells and start-up barriers). */
void qshm_seg_mark_exited(const qshm_seg *seg, uint32_t rank);

#endif /* QUAY_SHM_SEG_H */
