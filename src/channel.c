/*
 * channel.c — quay_channel, the public name of a channel as a context
 * (quay_channel.h). A channel is a quay_engine inside (one per
 * cfg.channels, e->root->chans[]); the handle is that engine's address
 * under a type of its own, so a channel can never be passed where an
 * engine is meant without a cast, and converting back costs nothing.
 */
#include <quay/quay.h>

#include "engine/internal.h"

static quay_engine *chan_engine(const quay_channel *c)
{
    return (quay_engine *)(uintptr_t)c;
}

quay_channel *quay_channel_get(quay_engine *e, uint32_t ch)
{
    return (quay_channel *)quay_engine_channel(e, ch);
}

quay_engine *quay_channel_engine(quay_channel *c) { return chan_engine(c); }

uint32_t quay_channel_id(const quay_channel *c)
{
    return c != NULL ? chan_engine(c)->chan_id : UINT32_MAX;
}

int quay_channel_save(const quay_channel *c, void *buf, size_t cap, size_t *len)
{
    return c != NULL ? quay_engine_save(chan_engine(c), buf, cap, len) : QUAY_EINVAL;
}

int quay_channel_restore(quay_channel *c, const void *blob, size_t len)
{
    return c != NULL ? quay_engine_restore(chan_engine(c), blob, len) : QUAY_EINVAL;
}
