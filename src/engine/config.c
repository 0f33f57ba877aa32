/*
 * config.c — configuration defaults and validation.
 */
#include "engine/internal.h"

void config_default(quay_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->version = QUAY_CONFIG_VERSION;
    cfg->flags = QUAY_CFG_COMPLETE_ACTIONS;
    cfg->rank = 0;
    cfg->nranks = 1;
    cfg->seed = 0x9e3779b97f4a7c15ull;
    cfg->eager_max = 8192;
    cfg->frag_size = 65536;
    cfg->pipeline_depth = 8;
    cfg->max_packet = 0;
    cfg->max_requests = 4096;
    cfg->max_unexpected = 4096;
    cfg->unexpected_bytes_max = (size_t)64 << 20;
    cfg->max_out = 1024;
    cfg->max_ctrl = 1024;
    cfg->max_comms = 64;
    cfg->reorder_window = 256;
    cfg->transport_caps = 0;
    cfg->flow = QUAY_FLOW_NONE;
    cfg->flow_window = 256;
    cfg->rto_init_ns = 1000000;
    cfg->rto_max_ns = 1000000000;
    cfg->retry_limit = 10;
    cfg->flow_credits = 0;
    cfg->channels = 1;
    cfg->max_regions = 256;
    cfg->rndv_mode = QUAY_RNDV_AUTO;
    cfg->rtr = 0;
    cfg->rtr_per_peer = 8;
    cfg->rtr_any = 0;
    cfg->any_slots = 8;
    cfg->coll_tree_degree = 4;
    cfg->coll_latency_ns = 2000;
    cfg->coll_gap_ns = 500;
    cfg->coll_ps_per_byte = 100;
    cfg->coll_segment = 0;
    cfg->coll_max = 64;
    cfg->forged_key_limit = 8;
    cfg->malformed_limit = 64;
}

int config_check(quay_config *c)
{
    if (c->nranks <= 0 || c->rank < 0 || c->rank >= c->nranks)
        return QUAY_EINVAL;
    if (c->flags & ~(uint32_t)(QUAY_CFG_COMPLETE_ACTIONS |
                               QUAY_CFG_CHECK_ORACLE | QUAY_CFG_LINEAR_MATCH |
                               QUAY_CFG_NO_COALESCE | QUAY_CFG_SEND_COPY))
        return QUAY_EINVAL;
    if (c->frag_size == 0 || c->frag_size > UINT32_MAX)
        return QUAY_EINVAL;
    if (c->pipeline_depth < 1 || c->pipeline_depth > 64)
        return QUAY_EINVAL;
    size_t body = c->eager_max > c->frag_size ? c->eager_max : c->frag_size;
    if (body > SIZE_MAX - QUAY_MAX_HEADER)
        return QUAY_EINVAL;
    if (c->max_packet == 0)
        c->max_packet = body + QUAY_MAX_HEADER;
    if (c->max_packet < body + QUAY_MAX_HEADER)
        return QUAY_EINVAL;
    if (c->max_requests == 0 || c->max_requests > REQ_MAX)
        return QUAY_EINVAL;
    if (c->max_unexpected == 0 || c->max_unexpected > (1u << 24))
        return QUAY_EINVAL;
    if (c->max_out == 0 || c->max_out > (1u << 24))
        return QUAY_EINVAL;
    if (c->max_ctrl == 0 || c->max_ctrl > (1u << 24))
        return QUAY_EINVAL;
    if (c->max_comms == 0 || c->max_comms > (1u << 16))
        return QUAY_EINVAL;
    if (c->reorder_window == 0 || c->reorder_window > (1u << 30))
        return QUAY_EINVAL;
    if ((c->alloc.alloc == NULL) != (c->alloc.release == NULL))
        return QUAY_EINVAL;
    /* (The flow-control policy and its knobs: the root picks the link by
     * c->flow, engine_parts.link_for, and the link checks its own,
     * link_ops.config_check.) */
    if (c->max_regions > (1u << 17))
        return QUAY_EINVAL;
    /* An explicit RDMA mode is a promise about the transport. */
    if (c->rndv_mode > QUAY_RNDV_PUT ||
        (c->rndv_mode == QUAY_RNDV_GET && !(c->transport_caps & QUAY_CAP_RDMA_GET)) ||
        (c->rndv_mode == QUAY_RNDV_PUT && !(c->transport_caps & QUAY_CAP_RDMA_PUT)))
        return QUAY_EINVAL;
    /* The sender writes into the receiver's buffer. */
    if (c->rtr > 1 || (c->rtr && !(c->transport_caps & QUAY_CAP_RDMA_PUT)) ||
        c->rtr_per_peer == 0 || c->rtr_per_peer > 64)
        return QUAY_EINVAL;
    /* Arbitration hands out RTR_ANY keys: it rides on receiver-initiated
     * transfers. Slot ids carry the index in 8 bits. */
    if (c->rtr_any > 1 || (c->rtr_any && !c->rtr) || c->any_slots == 0 || c->any_slots > 255)
        return QUAY_EINVAL;
    /* (The algorithms: engine_parts.coll_config_check.) The postal model
     * needs a positive gap and a latency of at least one gap (lambda >= 1). */
    if (c->coll_tree_degree < 2 || c->coll_tree_degree > 64 ||
        c->coll_gap_ns == 0 || c->coll_latency_ns < c->coll_gap_ns ||
        c->coll_latency_ns / c->coll_gap_ns > 1000000 || c->coll_max == 0 ||
        c->coll_max > 65536 || c->coll_offload > 1 || c->coll_bypass > 1)
        return QUAY_EINVAL;
    /* A transport that can touch our memory needs keys nobody can guess. */
    int secret = 0;
    for (int i = 0; i < 16; i++)
        secret |= c->key_secret[i];
    if (!secret && (c->transport_caps & (QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT |
                                         QUAY_CAP_RDMA_ATOMIC)))
        return QUAY_EINVAL;
    /* Only a frame says which channel a packet is for. */
    if (c->channels == 0 || c->channels > QUAY_MAX_CHANNELS ||
        (c->channels > 1 && c->flow == QUAY_FLOW_NONE))
        return QUAY_EINVAL;
    return 0;
}
