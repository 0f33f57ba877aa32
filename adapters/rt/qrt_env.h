/*
 * qrt_env.h — reading knobs from the environment (runtime and
 * transports). A malformed or out-of-range value is an error with a
 * message naming the variable, never silently a default.
 */
#ifndef QRT_ENV_H
#define QRT_ENV_H

#include <stdint.h>

/** Parse environment variable `name` as an unsigned integer (decimal, or
 *  0x hex) in [min, max] into *out. 0: *out set; 1: the variable is unset
 *  or empty (*out unchanged); -1: malformed or out of range (a message on
 *  stderr). */
int qrt_env_u64(const char *name, uint64_t min, uint64_t max, uint64_t *out);

/** Parse environment variable `name` as the name of a collective
 *  algorithm of operation `kind` (a quay_offload_kind), as
 *  quay_coll_alg_name spells it ("auto", "tree", "ring", ...), into *out.
 *  0, 1 or -1 as qrt_env_u64 (the message lists the names). */
int qrt_env_coll_alg(const char *name, uint32_t kind, uint32_t *out);

#endif /* QRT_ENV_H */
