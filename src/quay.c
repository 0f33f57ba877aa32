/*
 * quay.c — the composition root: the one place that knows every part of
 * the library and plugs them together. The engine (src/engine) is built
 * with the flow-control link (src/flowctl) below it and the collectives
 * (src/collectives) above it, each reached only through the table it is
 * given here.
 */
#include "collectives/coll.h"
#include "engine/engine.h"
#include "flowctl/chan.h"

int quay_engine_new(const quay_config *cfg, quay_engine **pe)
{
    static const engine_parts parts = {
        .link = &chan_link,
        .coll_attach = coll_attach,
        .coll_config_check = coll_config_check,
    };
    return engine_new(cfg, &parts, pe);
}
