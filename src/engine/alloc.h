/*
 * alloc.h — every allocation of an engine goes through the embedder's
 * allocator (quay_config.alloc), or libc's when it gives none.
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_ALLOC_H
#define QUAY_ENGINE_ALLOC_H

/** libc's malloc and free as a quay_allocator. */
quay_allocator alloc_libc(void);
/** n bytes (at least 1) from e's allocator, or NULL. */
void *qalloc(quay_engine *e, size_t n);
/** A zeroed array of n elements of sz bytes (n * sz checked), or NULL. */
void *qcalloc(quay_engine *e, size_t n, size_t sz);
/** Give p back to e's allocator (NULL: nothing). */
void qfree(quay_engine *e, void *p);

#endif /* QUAY_ENGINE_ALLOC_H */
