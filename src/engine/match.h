/*
 * match.h — the matcher's facade (match.c): posted receives and
 * unexpected messages by (context, source, tag), the fast matcher or the
 * linear oracle behind it (match_fast.h, match_oracle.c).
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_MATCH_H
#define QUAY_ENGINE_MATCH_H

int match_init(quay_engine *e);
void match_fini(quay_engine *e);
/** Empty every queue (context reset); the bins stay allocated. */
void match_reset(quay_engine *e);
quay_req *match_find_posted(quay_engine *e, quay_comm *c, int32_t src,
                            int32_t tag);
void match_add_posted(quay_engine *e, quay_req *r);
void match_remove_posted(quay_engine *e, quay_req *r);
umsg *match_find_unexp(quay_engine *e, quay_comm *c, int32_t src, int32_t tag);
void match_add_unexp(quay_engine *e, quay_comm *c, umsg *m);
void match_remove_unexp(quay_engine *e, umsg *m);

#endif /* QUAY_ENGINE_MATCH_H */
