/*
 * context.h — a channel's contexts (PM §3.4, C6–C7), above the engine and
 * the flow-control link: when a context may be switched, emptying one
 * (context.c), saving and restoring one (snapshot.c). The public entry
 * points are in quay.h; snapshot_state stays declared in
 * engine/internal.h, where tests and fuzzers find it.
 */
#ifndef QUAY_CONTEXT_H
#define QUAY_CONTEXT_H

#include "engine/internal.h"

/** 0 if the channel may switch context: flow control, healthy, quiesced,
 *  stable, no self traffic waiting. Else QUAY_ESTATE / QUAY_EBUSY / fatal. */
int context_switchable(const quay_engine *e);
/** Discard the running context: an empty one with `key` takes its place,
 *  quiesced, its link started afresh. Pools, bins and statistics stay;
 *  request ids keep counting. */
void context_reset(quay_engine *e, uint32_t key);

#endif /* QUAY_CONTEXT_H */
