/*
 * env.c — knobs from the environment (qrt_env.h).
 */
#include "qrt_env.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

int qrt_env_u64(const char *name, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *s = getenv(name);
    char *end = NULL;
    unsigned long long v;
    if (s == NULL || *s == '\0')
        return 1;
    errno = 0;
    v = strtoull(s, &end, 0);
    /* strtoull also takes leading blanks and a sign ("-1" wraps): a knob
     * starts with a digit. */
    if (errno != 0 || end == s || *end != '\0' || *s < '0' || *s > '9' || v < min || v > max) {
        fprintf(stderr, "quay: %s=\"%s\": expected an integer in [%" PRIu64 ", %" PRIu64 "]\n",
                name, s, min, max);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* Algorithm ids are small: the enums of quay_coll.h count from 1. */
#define ALG_ID_MAX 64u

int qrt_env_coll_alg(const char *name, uint32_t kind, uint32_t *out)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return 1;
    for (uint32_t alg = 0; alg < ALG_ID_MAX; alg++) {
        const char *n = quay_coll_alg_name(kind, alg);
        if (n != NULL && strcmp(n, s) == 0) {
            *out = alg;
            return 0;
        }
    }
    /* One write: every rank says it, and lines must not interleave. */
    char names[256];
    size_t at = 0;
    names[0] = '\0';
    for (uint32_t alg = 0; alg < ALG_ID_MAX && at < sizeof names; alg++) {
        const char *n = quay_coll_alg_name(kind, alg);
        if (n != NULL) {
            int w = snprintf(names + at, sizeof names - at, " %s", n);
            at += w > 0 ? (size_t)w : 0;
        }
    }
    fprintf(stderr, "quay: %s=\"%s\": expected one of%s\n", name, s, names);
    return -1;
}
