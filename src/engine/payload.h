/*
 * payload.h — small unexpected payloads in pooled slots, no allocation.
 *
 * An eager message that arrives before its receive keeps its payload until
 * the receive comes. Payloads of up to UPAY_SLOT bytes (the small messages
 * of the hot path) go into slots of a pool made with the engine, one per
 * message descriptor up to UPAY_MAX_SLOTS; longer ones, and small ones
 * when every slot is taken, are allocated (seq.c). The pool is memory of
 * the engine's creation, like the descriptors: the unexpected budget
 * (unexpected_bytes_max) counts the payload bytes kept, pooled or not. A
 * slot's first bytes link it on the free list while it is free.
 */
#ifndef QUAY_ENGINE_PAYLOAD_H
#define QUAY_ENGINE_PAYLOAD_H

#include "engine/internal.h"

/* Bytes per slot: what quay_send_inline takes, so every inline send that
 * arrives early fits one. */
#define UPAY_SLOT QUAY_INLINE_MAX

/* Slots at most: 64 KiB of pool per engine. */
#define UPAY_MAX_SLOTS 1024u

/* Make the pool (engine creation), after the descriptors; free it. */
int upay_init(quay_engine *e);
void upay_fini(quay_engine *e);

/* A free slot, or NULL when all are taken. */
static inline uint8_t *upay_get(quay_engine *e)
{
    uint8_t *s = e->upay_free;
    if (s == NULL)
        return NULL;
    memcpy(&e->upay_free, s, sizeof e->upay_free);
    return s;
}

/* Give slot s back. */
static inline void upay_put(quay_engine *e, uint8_t *s)
{
    memcpy(s, &e->upay_free, sizeof e->upay_free);
    e->upay_free = s;
}

/* n more payload bytes kept (the unexpected budget's count and its peak). */
static inline void ubytes_add(quay_engine *e, size_t n)
{
    e->ubytes += n;
    if (e->ubytes > e->ubytes_peak)
        e->ubytes_peak = e->ubytes;
}

/* Free m's payload, pool slot or allocation, if it holds one. */
static inline void umsg_drop_payload(quay_engine *e, umsg *m)
{
    if (m->data == NULL)
        return;
    e->ubytes -= m->len;
    if (m->pooled)
        upay_put(e, m->data);
    else
        qfree(e, m->data);
    m->data = NULL;
    m->pooled = 0;
}

/* Descriptor m back to the pool, its payload freed: umsg_free for a
 * message that holds no credit (UMF_CREDIT clear). */
static inline void umsg_put(quay_engine *e, umsg *m)
{
    umsg_drop_payload(e, m);
    m->where = UM_FREE;
    m->blink.next = (qlink *)e->msg_free;
    e->msg_free = m;
    e->msgs_used--;
}

#endif
