/*
 * payload.c — the small-payload pool (payload.h has the design).
 */
#include "engine/payload.h"

int upay_init(quay_engine *e)
{
    uint32_t n = e->nmsgs < UPAY_MAX_SLOTS ? e->nmsgs : UPAY_MAX_SLOTS;
    e->upay_mem = qalloc(e, (size_t)n * UPAY_SLOT);
    if (e->upay_mem == NULL)
        return QUAY_ENOMEM;
    e->upay_nslots = n;
    /* Lowest address first out. (A channel reset gives every kept
     * message's slot back: umsg_drop_payload.) */
    e->upay_free = NULL;
    for (uint32_t i = n; i-- > 0;)
        upay_put(e, e->upay_mem + (size_t)i * UPAY_SLOT);
    return 0;
}

void upay_fini(quay_engine *e)
{
    qfree(e, e->upay_mem);
    e->upay_mem = NULL;
    e->upay_free = NULL;
    e->upay_nslots = 0;
}
