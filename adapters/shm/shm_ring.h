/*
 * shm_ring.h — a lock-free single-producer / single-consumer ring of
 * variable-length records in shared memory (one per ordered pair of ranks
 * and per kind, shm_seg.h).
 *
 * Records are a 16-byte header (length, type, flags, stamp) and the
 * payload, padded to whole cache lines; a record never wraps: when it does
 * not fit before the end of the data area the producer fills the rest with
 * a PAD record and starts again at the beginning. Positions count bytes
 * forever (64 bits do not wrap). The producer publishes a record by
 * storing its stamp, ~position, last (release); the consumer polls the
 * stamp where the next record will be (acquire), so a small message costs
 * the consumer one cache line, the one holding it. The consumer publishes
 * `tail` with a release store after reading a record and the producer
 * reads it with acquire before reusing the space, so neither ever sees the
 * other's bytes half written. `head` follows the producer for
 * qshm_ring_holds alone. A record is at most qshm_ring_max_record() bytes
 * of payload, so that one always fits once the ring has drained (bigger
 * frames are cut in fragments by the transport).
 *
 * Each side keeps a private view (qshm_ring): its position and the last
 * value it read of the other side's counter, so most operations touch no
 * shared cache line but the record itself.
 */
#ifndef QUAY_SHM_RING_H
#define QUAY_SHM_RING_H

#include <stdint.h>

#include "shm_seg.h"

#define QSHM_REC_HDR 16u
/** Records start on, and fill, whole cache lines. */
#define QSHM_REC_ALIGN 64u
/** Record type 0 is the ring's own padding; the transport uses 1..255. */
#define QSHM_REC_PAD 0u

typedef struct qshm_ring {
    qshm_ring_ctl *ctl;
    uint8_t *data;
    uint64_t cap;  /* data bytes, a power of two */
    uint64_t pos;  /* producer: next byte to write; consumer: next to read */
    uint64_t seen; /* producer: last tail read (the consumer polls stamps) */
} qshm_ring;

/** A record seen by the consumer (valid until qshm_ring_consume). */
typedef struct qshm_rec {
    uint8_t type;
    uint8_t flags;
    uint32_t len;
    const uint8_t *data;
} qshm_rec;

/** Attach a private view; `producer` picks which counter it starts from. */
void qshm_ring_init(qshm_ring *r, qshm_ring_ctl *ctl, uint8_t *data, uint64_t cap,
                    int producer);

/** Largest payload of one record. */
uint32_t qshm_ring_max_record(const qshm_ring *r);

/** Producer: room for a record of `len` payload bytes (<= max_record)?
 *  Returns where to write the payload, or NULL if the ring is too full.
 *  Must be followed by qshm_ring_commit with the same len. */
void *qshm_ring_reserve(qshm_ring *r, uint32_t len);

/** Producer: publish the reserved record. */
void qshm_ring_commit(qshm_ring *r, uint8_t type, uint8_t flags, uint32_t len);

/** Consumer: the oldest unconsumed record: 1 (and *rec), 0 if the ring is
 *  empty, -1 if the ring holds garbage (a header that cannot be). */
int qshm_ring_peek(qshm_ring *r, qshm_rec *rec);

/** Consumer: release the record returned by the last peek. */
void qshm_ring_consume(qshm_ring *r, const qshm_rec *rec);

/** Consumer: 1 if any unconsumed record has `type`. Read-only; meant for a
 *  ring whose producer has exited (its contents no longer change). */
int qshm_ring_holds(const qshm_ring *r, uint8_t type);

#endif /* QUAY_SHM_RING_H */
