/*
 * engine.h — what the composition root (src/quay.c) needs to build an
 * engine: the parts that live above and below it, plugged in at creation
 * so the engine never names them.
 */
#ifndef QUAY_ENGINE_ENGINE_H
#define QUAY_ENGINE_ENGINE_H

#include <quay/quay.h>

#include "engine/link.h"

typedef struct engine_parts {
    /** The link for cfg.flow: 0 with *link set (NULL for QUAY_FLOW_NONE:
     *  no link), or QUAY_EINVAL for a policy this library does not have. */
    int (*link_for)(uint32_t flow, const link_ops **link);
    /** Called at creation when cfg.coll_bypass is set (the collectives
     *  must see arrivals before any collective call): 0 or QUAY_ENOMEM. */
    int (*coll_attach)(quay_engine *e);
    /** The collectives' part of the config check (their algorithms),
     *  after the engine's: 0 or QUAY_EINVAL. NULL: none. */
    int (*coll_config_check)(const quay_config *c);
} engine_parts;

/** quay_engine_new with its parts: the same contract (quay.h). */
int engine_new(const quay_config *cfg, const engine_parts *parts, quay_engine **pe);

#endif /* QUAY_ENGINE_ENGINE_H */
