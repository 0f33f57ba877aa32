/*
 * env.c — numeric knobs from the environment (qrt_env.h).
 */
#include "qrt_env.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int qrt_env_u64(const char *name, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *s = getenv(name);
    char *end = NULL;
    unsigned long long v;
    if (s == NULL || *s == '\0')
        return 1;
    errno = 0;
    v = strtoull(s, &end, 0);
    /* strtoull accepts "-1" and wraps it; a knob never wants that. */
    if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < min || v > max) {
        fprintf(stderr, "quay: %s=\"%s\": expected an integer in [%" PRIu64 ", %" PRIu64 "]\n",
                name, s, min, max);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}
