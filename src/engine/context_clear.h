/*
 * context_clear.h — emptying a channel's context inside the engine's own
 * pools (context_clear.c). The link (flow control) is not the engine's:
 * whoever clears a context re-initialises it (src/context.c).
 * context_free_heap, which engine teardown also calls, stays declared in
 * engine/internal.h.
 */
#ifndef QUAY_ENGINE_CONTEXT_CLEAR_H
#define QUAY_ENGINE_CONTEXT_CLEAR_H

#include "engine/internal.h"

/** Discard the running context's objects: pools emptied (request ids and
 *  region generations kept), queues, peers, matcher, attached buffer and
 *  timers reset, quiesced, `key` the context key. The link's state is
 *  its own: the caller resets it (link_ops.reset) before any use. */
void context_clear(quay_engine *e, uint32_t key);
/** Rebuild the request, message and region free lists, in index order,
 *  from the slots' own state (FREE, UM_FREE, not in use). */
void context_rebuild_free(quay_engine *e);

#endif /* QUAY_ENGINE_CONTEXT_CLEAR_H */
