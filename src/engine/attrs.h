/*
 * attrs.h — compiler hints the hot paths use, and QUAY_UNUSED.
 */
#ifndef QUAY_ENGINE_ATTRS_H
#define QUAY_ENGINE_ATTRS_H

/* Keeps a rare path out of its caller, so the common one stays short (no
 * register spills for what it never does). */
#if defined(__GNUC__) || defined(__clang__)
#define QUAY_NOINLINE __attribute__((noinline))
#else
#define QUAY_NOINLINE
#endif
/* ... and keeps a hot helper inside its caller, where the compiler's
 * size heuristics would call it (a call is a third of a short path). */
#if defined(__GNUC__) || defined(__clang__)
#define QUAY_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define QUAY_ALWAYS_INLINE inline
#endif

#define QUAY_UNUSED(x) ((void)(x))

#endif /* QUAY_ENGINE_ATTRS_H */
