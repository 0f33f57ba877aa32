/*
 * bench_common.h — small helpers shared by the benches: a monotonic clock,
 * fatal errors, size parsing, min/median, and the callgrind client
 * requests (no-ops when <valgrind/callgrind.h> was not found at configure
 * time, and nearly free when the program does not run under valgrind).
 *
 * Benches are programs, not tests: they may read clocks and print tables.
 * They use only the public API (include/quay/quay.h).
 */
#ifndef QUAY_BENCH_COMMON_H
#define QUAY_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay.h>

#ifdef QUAY_HAVE_CALLGRIND_H
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#else
#define BENCH_HAVE_CALLGRIND 0
#endif

/* Start instrumentation (valgrind --instr-atstart=no). */
static inline void bench_cg_start(void)
{
#ifdef QUAY_HAVE_CALLGRIND_H
    CALLGRIND_START_INSTRUMENTATION;
#endif
}

/* Stop instrumentation. */
static inline void bench_cg_stop(void)
{
#ifdef QUAY_HAVE_CALLGRIND_H
    CALLGRIND_STOP_INSTRUMENTATION;
#endif
}

/* Flip event collection (valgrind --collect-atstart=no starts it off).
 * Only collected regions count; instrumentation must be on. */
static inline void bench_cg_toggle(void)
{
#ifdef QUAY_HAVE_CALLGRIND_H
    CALLGRIND_TOGGLE_COLLECT;
#endif
}

/** Monotonic time in nanoseconds. */
uint64_t bench_now_ns(void);

/** Print "prog: message" to stderr and exit(1). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
void bench_die(const char *fmt, ...);

/** Die with the quay error name if rc != 0. */
void bench_check(int rc, const char *what);

/** Parse "8192", "64K", "64KiB", "1M", "1MiB" (binary units). 0 on success. */
int bench_parse_size(const char *s, size_t *out);

/** Parse a non-negative decimal integer. 0 on success. */
int bench_parse_u64(const char *s, uint64_t *out);

/** Minimum and median of v[0..n) (v is sorted in place). */
double bench_min(double *v, size_t n);
double bench_median(double *v, size_t n);

/** "1 KiB"-style label for a byte count, written into buf[0..cap). */
const char *bench_size_label(size_t bytes, char *buf, size_t cap);

/** Create two engines (ranks 0 and 1 of 2) from `base` and a world
 *  communicator (context 0) on each. Dies on failure. */
void bench_engines_new(const quay_config *base, quay_engine *e[2],
                       quay_comm *c[2]);

#endif /* QUAY_BENCH_COMMON_H */
