/*
 * shm.h — the shm transport's private state, shared by its files:
 *
 *   shm.c       open / close, sending (rings and the queues behind them),
 *               receiving (fragments, held packets), poll and blocking
 *   shm_rdma.c  single copy: the RDMA request / reply protocol (large
 *               copies split between both ranks) and the start-up probe
 *               of process_vm_readv
 *   shm_peer.c  peers that die: detection (pidfd, quayrun's marks) and
 *               cleanup
 *
 * Frames. Each ordered pair has two rings: `pkt` carries engine packets
 * and the final bye, in order; `ctl` carries the RDMA requests and
 * replies. They are apart so that a packet the engine refuses for now
 * (QUAY_EAGAIN, held at the head of its ring) never stalls the single-copy
 * traffic that may be what frees the engine.
 *
 * What a peer can make this rank keep is bounded: its rings (fixed at
 * start-up), one packet being reassembled (SHM_PKT_MAX), and the replies
 * queued toward it (SHM_REPLY_MAX: past it its ctl ring is not read). The
 * queues of this rank's own sends and requests hold what its engine
 * started (max_out sends; requests past SHM_RDMA_DEPTH wait unsent).
 */
#ifndef QUAY_SHM_H
#define QUAY_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "qrt_optab.h"
#include "qrt_shm.h"
#include "shm_ring.h"
#include "shm_seg.h"

/** Record types (shm_ring.h: 0 is padding). */
enum {
    SHM_PKT = 1,       /**< pkt ring: (a fragment of) an engine packet */
    SHM_BYE = 2,       /**< pkt ring: the sender sends nothing more */
    SHM_RDMA_REQ = 3,  /**< ctl ring: shm_rdma_req */
    SHM_RDMA_DONE = 4, /**< ctl ring: shm_rdma_done */
    SHM_RDMA_SPLIT = 5, /**< ctl ring: shm_rdma_split (before its DONE) */
};
/** SHM_PKT flag: more fragments of this packet follow. */
#define SHM_F_MORE 1u

/** Largest engine packet (TCP's limit too): send refuses a larger one, and
 *  a peer whose fragments add up to more is broken. The engine's packets
 *  stay far below (eager_max and frag_size: 8 KiB and 512 KiB). */
#define SHM_PKT_MAX ((64u << 20) + (64u << 10))
/** RDMA requests this rank keeps in flight toward one peer (its initiator
 *  depth): more wait unsent, in order (shm_peer.wait_*), until DONEs come
 *  back. So an honest peer never has more replies queued at a target. */
#define SHM_RDMA_DEPTH 1024u

/** Peer states. A peer whose process exited after its bye is DONE: its
 *  rings are still read (the segment outlives it). A FAILED one exited
 *  without a bye; nothing more is taken from it. */
enum { SHM_LIVE = 0, SHM_DONE = 1, SHM_FAILED = 2 };

/** A frame waiting for room in a ring. SEND frames point at the engine's
 *  iovecs (valid until op_done); small control frames are copied in. */
typedef struct shm_item {
    struct shm_item *next;
    uint8_t type;
    uint8_t has_token;
    uint32_t iovcnt;
    uint64_t token;
    quay_iov iov[QUAY_ACTION_IOV_MAX];
    size_t total; /* frame bytes */
    size_t sent;  /* bytes already in the ring (fragments) */
    uint8_t inl[64];
} shm_item;

typedef struct shm_queue {
    shm_item *head;
    shm_item *tail;
} shm_queue;

/** DONE replies queued toward one peer, in bytes of queue (one shm_item
 *  each). Once no other reply fits, the peer has broken SHM_RDMA_DEPTH:
 *  its ctl ring is not read until the queue is down to SHM_REPLY_LOW. An
 *  honest peer's replies always leave room for one more, so its ring is
 *  always read, and two ranks never both wait for the other to read. */
#define SHM_REPLY_MAX ((size_t)(SHM_RDMA_DEPTH + 1) * sizeof(shm_item))
#define SHM_REPLY_LOW (SHM_REPLY_MAX / 2)

struct shm_wait;

typedef struct shm_peer {
    qshm_ring out_pkt, out_ctl; /* this rank -> peer (producer side) */
    qshm_ring in_pkt, in_ctl;   /* peer -> this rank (consumer side) */
    shm_queue q_pkt, q_ctl;     /* frames waiting for room in out_* */
    qshm_slot *slot;
    /* Reassembly of a packet that came in fragments. */
    uint8_t *asm_buf;
    size_t asm_len;
    size_t asm_cap;
    int asm_ready; /* complete, refused (EAGAIN): offer again first */
    int pidfd;     /* -1 without pidfd_open */
    pid_t pid;
    uint8_t state;   /* SHM_LIVE, SHM_DONE, SHM_FAILED */
    uint8_t got_bye; /* its bye was consumed */
    uint8_t ctl_paused; /* its replies fill SHM_REPLY_MAX: in_ctl not read */
    uint32_t rdma_out; /* this rank's RDMA actions toward it, in flight */
    uint32_t rdma_wait; /* of those, requests waiting unsent (depth) */
    struct shm_wait *wait_head, *wait_tail;
    size_t reply_bytes; /* DONEs in q_ctl (SHM_REPLY_MAX) */
} shm_peer;

typedef struct shm_t {
    quay_transport base;
    qshm_seg seg;
    qshm_slot *me;
    shm_peer *peers;
    uint32_t epoch_seen;  /* last qshm_header.epoch looked at */
    int64_t poll_ns;      /* longest single sleep: liveness is rechecked after */
    uint32_t max_chunk;   /* largest pkt record payload */
    uint32_t drain_batch; /* records taken from one ring per poll */
    qrt_optab optab; /* RDMA actions this rank started, awaiting DONE */
    uint64_t probe_word;
    uint64_t split_min; /* GET / PUT this long or longer: copy split (0: never) */
    int want_space; /* some queue is waiting for room */
} shm_t;

/* shm.c */
/** Send a small frame (`len` <= 64 bytes, copied) on the ctl ring
 *  toward `peer`: now if nothing is queued and it fits, else queued behind
 *  the rest. 0 or QUAY_ENOMEM. Never calls the sink. */
int shm_send_ctl(shm_t *t, int32_t peer, uint8_t type, const void *bytes, size_t len);
/** The same, but only now: 1 if it went straight into the ring, 0 if
 *  frames are queued ahead or it does not fit (nothing is queued then). */
int shm_try_ctl(shm_t *t, int32_t peer, uint8_t type, const void *bytes, size_t len);
/** Try to move peer's queued frames into its rings. Returns the records
 *  written (0: none fit). */
int shm_flush_peer(shm_t *t, int32_t peer);
/** Consume everything left in peer's rings (its process has exited).
 *  Returns 1 if a bye was among it. */
int shm_drain_dead(shm_t *t, int32_t peer);
/** Free every frame queued toward peer, answering op_done(QUAY_EPEER) for
 *  those with a token. */
void shm_drop_queues(shm_t *t, int32_t peer);

/* shm_rdma.c */
/** Read the single-copy knobs (QUAY_SHM_SPLIT_KB). 0 or QUAY_EINVAL. */
int shm_rdma_config(shm_t *t);
/** Start-up probe: can this rank process_vm_readv a sibling? Publishes
 *  the verdict in the header. */
void shm_rdma_probe(shm_t *t);
/** Start an RDMA action (quay_transport_ops.rdma). */
int shm_rdma_start(shm_t *t, const quay_action *a);
/** A ctl record from `peer` (request: execute and reply; reply: finish
 *  the action). Returns 1 if it was one. */
int shm_rdma_record(shm_t *t, int32_t peer, const qshm_rec *rec);
/** Finish every action toward `peer` with QUAY_EPEER (waiting ones too). */
void shm_rdma_fail_peer(shm_t *t, int32_t peer);
void shm_rdma_free(shm_t *t);

/* shm_peer.c */
/** Open pidfds for every peer (after the first start-up barrier). */
void shm_peers_watch(shm_t *t);
/** Look for peers whose process has exited; settle each (drain, then bye
 *  or failure). `force`: check even if quayrun's epoch did not move.
 *  Returns the number of peers settled. */
int shm_peers_check(shm_t *t, int force);
void shm_peers_unwatch(shm_t *t);

#endif /* QUAY_SHM_H */
