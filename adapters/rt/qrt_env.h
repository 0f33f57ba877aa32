/*
 * qrt_env.h — reading numeric knobs from the environment (runtime and
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

#endif /* QRT_ENV_H */
