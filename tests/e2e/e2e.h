/*
 * e2e.h — helpers for the end-to-end programs: real processes started by
 * quayrun, one engine each on the shm transport (adapters/rt).
 *
 * A program checks with E2E_CHECK; the first failed check prints the rank,
 * the place and the expression, and ends the process with status 1, so
 * quayrun (and CTest) report the failure. The other ranks then see a dead
 * peer and end too, never hang.
 */
#ifndef QUAY_E2E_H
#define QUAY_E2E_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay.h>
#include <quay/quay_coll.h>

#include "quay_rt.h"

typedef struct e2e {
    qrt *rt;
    quay_engine *e;
    quay_comm *world;
    int32_t rank;
    int32_t size;
} e2e;

#if defined(__GNUC__) || defined(__clang__)
#define E2E_NORETURN __attribute__((noreturn))
#define E2E_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define E2E_NORETURN
#define E2E_PRINTF(a, b)
#endif

/** Print "rank R: file:line: message" and end the process with status 1. */
E2E_NORETURN void e2e_fail(const char *file, int line, const char *fmt, ...) E2E_PRINTF(3, 4);

#define E2E_CHECK(cond)                                                    \
    do {                                                                   \
        if (!(cond))                                                       \
            e2e_fail(__FILE__, __LINE__, "check failed: %s", #cond);      \
    } while (0)

/** expr must return 0 (a quay call). */
#define E2E_OK(expr)                                                       \
    do {                                                                   \
        int e2e_rc_ = (expr);                                              \
        if (e2e_rc_ != 0)                                                  \
            e2e_fail(__FILE__, __LINE__, "%s returned %s", #expr,         \
                     quay_strerror(e2e_rc_));                              \
    } while (0)

/** Start the runtime (default config) or fail. */
void e2e_init(e2e *t);
/** Finalize; returns the process exit status (0). */
int e2e_finish(e2e *t);

/** Fill / check `len` bytes with a pattern derived from `seed`. check
 *  returns the index of the first wrong byte, or -1. */
void e2e_fill(void *buf, size_t len, uint64_t seed);
long e2e_verify(const void *buf, size_t len, uint64_t seed);

/** Blocking send (standard mode); the send must succeed. */
void e2e_send(e2e *t, const void *buf, size_t len, int32_t dst, int32_t tag);
/** Blocking receive; returns its status (whatever its error). */
quay_status e2e_recv(e2e *t, void *buf, size_t cap, int32_t src, int32_t tag);
/** Wait for r, free it, return its status. */
quay_status e2e_wait(e2e *t, quay_req *r);
/** quay_ibarrier on the world, waited for; must succeed. */
void e2e_barrier(e2e *t);

/** 1 in the sanitizer build (shorter lists there). */
int e2e_sanitized(void);

#endif /* QUAY_E2E_H */
