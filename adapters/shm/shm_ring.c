/*
 * shm_ring.c — SPSC ring of variable-length records (shm_ring.h): the
 * parts that run once per ring, not per message (those are inline in the
 * header).
 */
#include "shm_ring.h"

#include <stdatomic.h>

_Static_assert(sizeof(qshm_rec_hdr) == QSHM_REC_HDR, "record header is 16 bytes");

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

int qshm_ring_holds(const qshm_ring *r, uint8_t type)
{
    uint64_t head = atomic_load_explicit(&r->ctl->head, memory_order_acquire);
    uint64_t pos = r->pos;
    qshm_rec h;
    if (head - pos > r->cap)
        return 0;
    while (pos != head) {
        if (qshm_read_hdr(r, pos, &h) != 1)
            return 0;
        if (h.type == type)
            return 1;
        pos += qshm_rec_bytes(h.len);
        if (head - pos > r->cap) /* overshot: garbage */
            return 0;
    }
    return 0;
}
