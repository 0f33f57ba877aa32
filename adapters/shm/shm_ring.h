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

#include <stdatomic.h>
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

/** A record's header in the ring. The stamp is ~(the record's position):
 *  each record announces itself, so the consumer polls the line it will
 *  read anyway instead of the producer's counter (one cache-line transfer
 *  per small message, not two). Zeroed memory never carries a valid stamp
 *  (~pos == 0 only at pos 2^64 - 1, never reached), nor does a record of
 *  an earlier lap. */
typedef struct qshm_rec_hdr {
    uint32_t len;
    uint8_t type;
    uint8_t flags;
    uint16_t zero;
    _Atomic uint64_t stamp;
} qshm_rec_hdr;

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

/* The operations below run once or more per message on both sides: they
 * are inline, so a small message costs no calls into the ring. */

/* Records take whole cache lines: a small message is one line, never
 * split across two. */
static inline uint64_t qshm_rec_bytes(uint32_t len)
{
    return ((uint64_t)QSHM_REC_HDR + len + QSHM_REC_ALIGN - 1) & ~(uint64_t)(QSHM_REC_ALIGN - 1);
}

static inline qshm_rec_hdr *qshm_hdr_at(const qshm_ring *r, uint64_t pos)
{
    return (qshm_rec_hdr *)(void *)(r->data + (pos & (r->cap - 1)));
}

/* Write a header and publish it: after its payload (release). */
static inline void qshm_hdr_put(qshm_ring *r, uint64_t pos, uint32_t len, uint8_t type,
                                uint8_t flags)
{
    qshm_rec_hdr *h = qshm_hdr_at(r, pos);
    h->len = len;
    h->type = type;
    h->flags = flags;
    h->zero = 0;
    atomic_store_explicit(&h->stamp, ~pos, memory_order_release);
}

/** Producer: room for a record of `len` payload bytes (<= max_record)?
 *  Returns where to write the payload, or NULL if the ring is too full.
 *  Must be followed by qshm_ring_commit with the same len. */
static inline void *qshm_ring_reserve(qshm_ring *r, uint32_t len)
{
    uint64_t need = qshm_rec_bytes(len);
    uint64_t off = r->pos & (r->cap - 1);
    uint64_t pad = need > r->cap - off ? r->cap - off : 0;
    if (r->pos + pad + need - r->seen > r->cap) {
        r->seen = atomic_load_explicit(&r->ctl->tail, memory_order_acquire);
        if (r->pos + pad + need - r->seen > r->cap)
            return NULL;
    }
    if (pad != 0) {
        /* To the end of the data area; the consumer skips it. */
        qshm_hdr_put(r, r->pos, (uint32_t)(pad - QSHM_REC_HDR), QSHM_REC_PAD, 0);
        r->pos += pad;
        off = 0;
    }
    return r->data + off + QSHM_REC_HDR;
}

/** Producer: publish the reserved record. */
static inline void qshm_ring_commit(qshm_ring *r, uint8_t type, uint8_t flags, uint32_t len)
{
    qshm_hdr_put(r, r->pos, len, type, flags);
    r->pos += qshm_rec_bytes(len);
    /* The counter is for qshm_ring_holds (a dead producer's ring) only:
     * the consumer polls stamps. */
    atomic_store_explicit(&r->ctl->head, r->pos, memory_order_relaxed);
}

/** Consumer: 1 if a record (perhaps only padding) is published where the
 *  next one will be, else 0. One load: the idle poll's whole cost. */
static inline int qshm_ring_ready(const qshm_ring *r)
{
    return atomic_load_explicit(&qshm_hdr_at(r, r->pos)->stamp, memory_order_acquire) == ~r->pos;
}

/* The header at `pos` if its stamp says it was published there: 1, and
 * *out; 0 if not (yet); -1 if it cannot be one of ours. */
static inline int qshm_read_hdr(const qshm_ring *r, uint64_t pos, qshm_rec *out)
{
    const qshm_rec_hdr *h = qshm_hdr_at(r, pos);
    if (atomic_load_explicit(&h->stamp, memory_order_acquire) != ~pos)
        return 0;
    out->len = h->len;
    out->type = h->type;
    out->flags = h->flags;
    uint64_t off = pos & (r->cap - 1);
    if (QSHM_REC_HDR + (uint64_t)out->len > r->cap - off)
        return -1;
    out->data = r->data + off + QSHM_REC_HDR;
    return 1;
}

/** Consumer: the oldest unconsumed record: 1 (and *rec), 0 if the ring is
 *  empty, -1 if the ring holds garbage (a header that cannot be). */
static inline int qshm_ring_peek(qshm_ring *r, qshm_rec *rec)
{
    for (;;) {
        int rc = qshm_read_hdr(r, r->pos, rec);
        if (rc <= 0 || rec->type != QSHM_REC_PAD)
            return rc;
        r->pos += qshm_rec_bytes(rec->len); /* released with the next consume */
    }
}

/** Consumer: release the record returned by the last peek. */
static inline void qshm_ring_consume(qshm_ring *r, const qshm_rec *rec)
{
    r->pos += qshm_rec_bytes(rec->len);
    atomic_store_explicit(&r->ctl->tail, r->pos, memory_order_release);
}

/** Consumer: 1 if any unconsumed record has `type`. Read-only; meant for a
 *  ring whose producer has exited (its contents no longer change). */
int qshm_ring_holds(const qshm_ring *r, uint8_t type);

#endif /* QUAY_SHM_RING_H */
