/*
 * sim_util.h — the few helpers the `quay-sim tables` code shares: a
 * monotonic clock (for the simulator's own speed), fatal errors and
 * allocation that cannot fail quietly. Tools may read clocks; src/ may not.
 */
#ifndef QUAY_TOOLS_SIM_UTIL_H
#define QUAY_TOOLS_SIM_UTIL_H

#include <stddef.h>
#include <stdint.h>

/** Monotonic wall time in nanoseconds. */
uint64_t sim_now_ns(void);

/** Print "quay-sim tables: message" to stderr and exit(1). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
void sim_die(const char *fmt, ...);

/** Die with the quay error name if rc != 0. */
void sim_check(int rc, const char *what);

/** calloc(n, size) that dies when memory runs out. */
void *sim_calloc(size_t n, size_t size);

#endif /* QUAY_TOOLS_SIM_UTIL_H */
