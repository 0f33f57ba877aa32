/*
 * context.c — a channel's context: when it may be switched, and discarding
 * it (PM's C7 starts from an empty channel, or from a saved context that
 * snapshot.c puts back into the emptied one). The engine empties its own
 * pools (engine/context_clear.c); the link starts afresh (link_ops.reset).
 */
#include "context.h"

#include "engine/context_clear.h"

int context_switchable(const quay_engine *e)
{
    if (!e->flow)
        return QUAY_ESTATE;
    if (e->fatal)
        return e->fatal;
    if (quay_channel_is_stable(e) != 1 || e->loop_head != NULL)
        return QUAY_EBUSY;
    if (e->coll.hooks != NULL && e->coll.hooks->busy(e))
        return QUAY_EBUSY; /* a collective schedule is running, or one
                              started by an arrival (bypass) awaits its
                              call: ended (failed) it is no longer running,
                              but its request is, and schedules are not saved */
    return 0;
}

void context_reset(quay_engine *e, uint32_t key)
{
    context_clear(e, key);
    e->link->reset(e); /* (switchable: there is a link) */
}

int quay_channel_reset(quay_engine *e, uint32_t key)
{
    if (e == NULL)
        return QUAY_EINVAL;
    int rc = context_switchable(e);
    if (rc != 0)
        return rc;
    context_reset(e, key);
    return 0;
}
