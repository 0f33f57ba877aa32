/*
 * shm_ring.c — SPSC ring of variable-length records (shm_ring.h).
 */
#include "shm_ring.h"

#include <stdatomic.h>
#include <string.h>

/* The stamp is ~(the record's position): each record announces itself,
 * so the consumer polls the line it will read anyway instead of the
 * producer's counter (one cache-line transfer per small message, not
 * two). Zeroed memory never carries a valid stamp (~pos == 0 only at
 * pos 2^64 - 1, never reached), nor does a record of an earlier lap. */
typedef struct rec_hdr {
    uint32_t len;
    uint8_t type;
    uint8_t flags;
    uint16_t zero;
    _Atomic uint64_t stamp;
} rec_hdr;

_Static_assert(sizeof(rec_hdr) == QSHM_REC_HDR, "record header is 16 bytes");

/* Records take whole cache lines: a small message is one line, never
 * split across two. */
static uint64_t rec_bytes(uint32_t len)
{
    return ((uint64_t)QSHM_REC_HDR + len + QSHM_REC_ALIGN - 1) & ~(uint64_t)(QSHM_REC_ALIGN - 1);
}

static rec_hdr *hdr_at(const qshm_ring *r, uint64_t pos)
{
    return (rec_hdr *)(void *)(r->data + (pos & (r->cap - 1)));
}

/* Write a header and publish it: after its payload (release). */
static void hdr_put(qshm_ring *r, uint64_t pos, uint32_t len, uint8_t type, uint8_t flags)
{
    rec_hdr *h = hdr_at(r, pos);
    h->len = len;
    h->type = type;
    h->flags = flags;
    h->zero = 0;
    atomic_store_explicit(&h->stamp, ~pos, memory_order_release);
}

void qshm_ring_init(qshm_ring *r, qshm_ring_ctl *ctl, uint8_t *data, uint64_t cap,
                    int producer)
{
    r->ctl = ctl;
    r->data = data;
    r->cap = cap;
    /* A fresh segment has both counters at 0; reading them keeps a view
     * that is attached later (never, today) consistent as well. */
    r->pos = atomic_load_explicit(producer ? &ctl->head : &ctl->tail, memory_order_acquire);
    r->seen = atomic_load_explicit(producer ? &ctl->tail : &ctl->head, memory_order_acquire);
}

uint32_t qshm_ring_max_record(const qshm_ring *r)
{
    /* Half the ring: a record and the padding before it always fit in an
     * empty ring, wherever the head stands. */
    return (uint32_t)(r->cap / 2 - QSHM_REC_HDR);
}

void *qshm_ring_reserve(qshm_ring *r, uint32_t len)
{
    uint64_t need = rec_bytes(len);
    uint64_t off = r->pos & (r->cap - 1);
    uint64_t pad = need > r->cap - off ? r->cap - off : 0;
    if (r->pos + pad + need - r->seen > r->cap) {
        r->seen = atomic_load_explicit(&r->ctl->tail, memory_order_acquire);
        if (r->pos + pad + need - r->seen > r->cap)
            return NULL;
    }
    if (pad != 0) {
        /* To the end of the data area; the consumer skips it. */
        hdr_put(r, r->pos, (uint32_t)(pad - QSHM_REC_HDR), QSHM_REC_PAD, 0);
        r->pos += pad;
        off = 0;
    }
    return r->data + off + QSHM_REC_HDR;
}

void qshm_ring_commit(qshm_ring *r, uint8_t type, uint8_t flags, uint32_t len)
{
    hdr_put(r, r->pos, len, type, flags);
    r->pos += rec_bytes(len);
    /* The counter is for qshm_ring_holds (a dead producer's ring) only:
     * the consumer polls stamps. */
    atomic_store_explicit(&r->ctl->head, r->pos, memory_order_relaxed);
}

/* The header at `pos` if its stamp says it was published there: 1, and
 * *out; 0 if not (yet); -1 if it cannot be one of ours. */
static int read_hdr(const qshm_ring *r, uint64_t pos, rec_hdr *out)
{
    const rec_hdr *h = hdr_at(r, pos);
    if (atomic_load_explicit(&h->stamp, memory_order_acquire) != ~pos)
        return 0;
    out->len = h->len;
    out->type = h->type;
    out->flags = h->flags;
    uint64_t off = pos & (r->cap - 1);
    if (QSHM_REC_HDR + (uint64_t)out->len > r->cap - off)
        return -1;
    return 1;
}

int qshm_ring_peek(qshm_ring *r, qshm_rec *rec)
{
    rec_hdr h;
    for (;;) {
        int rc = read_hdr(r, r->pos, &h);
        if (rc <= 0)
            return rc;
        if (h.type != QSHM_REC_PAD)
            break;
        r->pos += rec_bytes(h.len); /* released with the next consume */
    }
    rec->type = h.type;
    rec->flags = h.flags;
    rec->len = h.len;
    rec->data = r->data + (r->pos & (r->cap - 1)) + QSHM_REC_HDR;
    return 1;
}

void qshm_ring_consume(qshm_ring *r, const qshm_rec *rec)
{
    r->pos += rec_bytes(rec->len);
    atomic_store_explicit(&r->ctl->tail, r->pos, memory_order_release);
}

int qshm_ring_holds(const qshm_ring *r, uint8_t type)
{
    uint64_t head = atomic_load_explicit(&r->ctl->head, memory_order_acquire);
    uint64_t pos = r->pos;
    rec_hdr h;
    if (head - pos > r->cap)
        return 0;
    while (pos != head) {
        if (read_hdr(r, pos, &h) != 1)
            return 0;
        if (h.type == type)
            return 1;
        pos += rec_bytes(h.len);
        if (head - pos > r->cap) /* overshot: garbage */
            return 0;
    }
    return 0;
}
