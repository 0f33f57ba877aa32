/*
 * copy.h — payload copies for the hot paths.
 */
#ifndef QUAY_ENGINE_COPY_H
#define QUAY_ENGINE_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/attrs.h"

/* A payload of at most 16 bytes copied with no library call, so a path
 * that copies it may stay a leaf (no frame to set up): two overlapping
 * words, halves or bytes. */
static QUAY_ALWAYS_INLINE void copy_small(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (n >= 8) {
        uint64_t a, z;
        memcpy(&a, s, 8);
        memcpy(&z, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &z, 8);
    } else if (n >= 4) {
        uint32_t a, z;
        memcpy(&a, s, 4);
        memcpy(&z, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &z, 4);
    } else if (n != 0) {
        uint8_t a = s[0], m = s[n / 2], z = s[n - 1];
        d[0] = a;
        d[n / 2] = m;
        d[n - 1] = z;
    }
}

/* A payload copy on a hot path: 8 to 16 bytes (copy_small's two
 * overlapping words) without a library call; the rest through memcpy. */
static QUAY_ALWAYS_INLINE void copy_payload(void *dst, const void *src, size_t n)
{
    if (n >= 8 && n <= 16)
        copy_small(dst, src, n);
    else
        memcpy(dst, src, n);
}

#endif /* QUAY_ENGINE_COPY_H */
