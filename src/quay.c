/*
 * quay.c — the composition root: the one place that knows every part of
 * the library and plugs them together. The engine (src/engine) is built
 * with the flow-control link (src/flowctl) below it and the collectives
 * (src/collectives) above it, each reached only through the table it is
 * given here.
 */
#include "collectives/coll.h"
#include "engine/engine.h"

/* The flow-control policies: each file of src/flowctl/policy_*.c defines
 * one table (flowctl/chan.h, CHAN_LINK). */
extern const link_ops acknack_link;
extern const link_ops credit_link;

/* The link of a policy; QUAY_FLOW_NONE has none (the engine hands its
 * packets straight out). */
static int link_for(uint32_t flow, const link_ops **link)
{
    static const link_ops *const links[] = {
        [QUAY_FLOW_ACKNACK] = &acknack_link,
        [QUAY_FLOW_CREDIT] = &credit_link,
    };
    *link = NULL;
    if (flow == QUAY_FLOW_NONE)
        return 0;
    if (flow >= sizeof links / sizeof links[0] || links[flow] == NULL)
        return QUAY_EINVAL;
    *link = links[flow];
    return 0;
}

int quay_engine_new(const quay_config *cfg, quay_engine **pe)
{
    static const engine_parts parts = {
        .link_for = link_for,
        .coll_attach = coll_attach,
        .coll_config_check = coll_config_check,
    };
    return engine_new(cfg, &parts, pe);
}
