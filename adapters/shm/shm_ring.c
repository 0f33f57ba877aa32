/*
 * shm_ring.c — SPSC ring of variable-length records (shm_ring.h).
 */
#include "shm_ring.h"

#include <stdatomic.h>
#include <string.h>

typedef struct rec_hdr {
    uint32_t len;
    uint8_t type;
    uint8_t flags;
    uint16_t zero;
} rec_hdr;

_Static_assert(sizeof(rec_hdr) == QSHM_REC_HDR, "record header is 8 bytes");

static uint64_t rec_bytes(uint32_t len)
{
    return QSHM_REC_HDR + (((uint64_t)len + 7) & ~(uint64_t)7);
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
        /* Published together with the record that follows it. */
        rec_hdr h = {(uint32_t)(pad - QSHM_REC_HDR), QSHM_REC_PAD, 0, 0};
        memcpy(r->data + off, &h, sizeof h);
        r->pos += pad;
        off = 0;
    }
    return r->data + off + QSHM_REC_HDR;
}

void qshm_ring_commit(qshm_ring *r, uint8_t type, uint8_t flags, uint32_t len)
{
    rec_hdr h = {len, type, flags, 0};
    memcpy(r->data + (r->pos & (r->cap - 1)), &h, sizeof h);
    r->pos += rec_bytes(len);
    atomic_store_explicit(&r->ctl->head, r->pos, memory_order_release);
}

/* Read the header at `pos` (< head); -1 if it cannot be one of ours. */
static int read_hdr(const qshm_ring *r, uint64_t pos, rec_hdr *h)
{
    uint64_t off = pos & (r->cap - 1);
    memcpy(h, r->data + off, sizeof *h);
    if (QSHM_REC_HDR + (uint64_t)h->len > r->cap - off)
        return -1;
    return 0;
}

int qshm_ring_peek(qshm_ring *r, qshm_rec *rec)
{
    rec_hdr h;
    for (;;) {
        if (r->pos == r->seen) {
            r->seen = atomic_load_explicit(&r->ctl->head, memory_order_acquire);
            if (r->pos == r->seen)
                return 0;
        }
        if (r->seen - r->pos > r->cap || read_hdr(r, r->pos, &h) != 0)
            return -1;
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
        if (read_hdr(r, pos, &h) != 0)
            return 0;
        if (h.type == type)
            return 1;
        pos += rec_bytes(h.len);
        if (head - pos > r->cap) /* overshot: garbage */
            return 0;
    }
    return 0;
}
