/*
 * match_oracle.h — the linear matcher: the test oracle for match.c.
 *
 * Two arrays in post / arrival order and a first-match scan, exactly the
 * MPI rule with nothing clever (as McMPI's process-wide lists). O(n) per
 * operation; memory preallocated at creation.
 */
#ifndef QUAY_ENGINE_MATCH_ORACLE_H
#define QUAY_ENGINE_MATCH_ORACLE_H

#include "engine/internal.h"

typedef struct oracle oracle;

oracle *oracle_new(quay_engine *e, uint32_t max_posted, uint32_t max_unexp);
void oracle_free(quay_engine *e, oracle *o);
/** Forget every entry (context reset). */
void oracle_clear(oracle *o);

quay_req *oracle_find_posted(oracle *o, uint32_t ctx, int32_t src, int32_t tag);
void oracle_add_posted(oracle *o, quay_req *r);
void oracle_remove_posted(oracle *o, const quay_req *r);
umsg *oracle_find_unexp(oracle *o, uint32_t ctx, int32_t src, int32_t tag);
void oracle_add_unexp(oracle *o, umsg *m);
void oracle_remove_unexp(oracle *o, const umsg *m);
/** The i-th unexpected message in arrival order (all contexts), NULL past
 *  the last: how a snapshot walks them when the oracle is the matcher. */
umsg *oracle_unexp_at(const oracle *o, uint32_t i);

#endif /* QUAY_ENGINE_MATCH_ORACLE_H */
