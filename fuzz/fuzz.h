/*
 * fuzz.h — what the harnesses share (fuzz/README.md): the entry point,
 * an input cursor, invariant checks that abort, a counting allocator, and
 * the configurations fuzz_restore and the seed generator agree on.
 *
 * A harness is one LLVMFuzzerTestOneInput. fuzz_main.c turns it into a
 * replay program (files and directories on the command line, for CTest)
 * or, built by afl-clang-fast with QUAY_FUZZ_AFL, into an AFL++
 * persistent-mode program; clang -fsanitize=fuzzer links it to libFuzzer.
 * Every input is bounded in memory and time by the harness itself.
 */
#ifndef QUAY_FUZZ_H
#define QUAY_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay.h>

/** The harness: run one input. Returns 0; aborts on a violated invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------------ */
/* Input cursor: reads past the end give zeros, so any length is valid  */
/* ------------------------------------------------------------------ */

typedef struct fz_in {
    const uint8_t *p;
    size_t n;
    size_t pos;
} fz_in;

static inline void fz_init(fz_in *in, const uint8_t *p, size_t n)
{
    in->p = p;
    in->n = n;
    in->pos = 0;
}

/** 1 while unread bytes remain. */
static inline int fz_more(const fz_in *in)
{
    return in->pos < in->n;
}

static inline size_t fz_left(const fz_in *in)
{
    return in->n - in->pos;
}

static inline uint8_t fz_u8(fz_in *in)
{
    return in->pos < in->n ? in->p[in->pos++] : 0;
}

/** Little-endian, like the wire. */
static inline uint16_t fz_u16(fz_in *in)
{
    uint16_t v = fz_u8(in);
    return (uint16_t)(v | (uint16_t)fz_u8(in) << 8);
}

static inline uint32_t fz_u32(fz_in *in)
{
    uint32_t v = fz_u16(in);
    return v | (uint32_t)fz_u16(in) << 16;
}

static inline uint64_t fz_u64(fz_in *in)
{
    uint64_t v = fz_u32(in);
    return v | (uint64_t)fz_u32(in) << 32;
}

/** A number in [0, n) (n > 0): one byte when n <= 256, else two. */
static inline uint32_t fz_below(fz_in *in, uint32_t n)
{
    return (n <= 256 ? fz_u8(in) : fz_u16(in)) % n;
}

/** Copy up to `want` bytes into out (the rest zero); returns bytes read. */
size_t fz_bytes(fz_in *in, void *out, size_t want);

/* ------------------------------------------------------------------ */
/* Invariants                                                           */
/* ------------------------------------------------------------------ */

/** Print "fuzz: <harness>: <message>" and abort(): the fuzzer records a
 *  crash. */
void fz_fail(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((noreturn, format(printf, 1, 2)))
#endif
    ;

/** Name printed by fz_fail (set by each harness). */
extern const char *fz_harness;

/** FUZZ_VERBOSE from the environment (replay triage): 0 when unset, else
 *  its number (1: a summary per input, 2: every event too). */
int fz_verbose(void);

/** The return codes a call may give: -1 terminated list. 1 if rc is in. */
int fz_code_in(int rc, const int *codes);

/* ------------------------------------------------------------------ */
/* Counting allocator (quay_config.alloc)                               */
/* ------------------------------------------------------------------ */

typedef struct fz_mem {
    size_t live;       /* bytes allocated and not released */
    size_t peak;
    uint64_t nalloc;   /* successful allocations */
    uint64_t fail_at;  /* 0: never fail; else the fail_at-th allocation
                          from now on (counted from 1) returns NULL */
    size_t max_block;  /* 0: no limit; else a larger request returns NULL
                          (a configuration asking for huge pools fails
                          at once instead of taking the machine) */
    uint64_t nfailed;
} fz_mem;

void *fz_alloc(size_t size, void *ctx);
void fz_release(void *ptr, void *ctx);
/** Hook `m` into cfg. */
void fz_mem_use(fz_mem *m, quay_config *cfg);

/* ------------------------------------------------------------------ */
/* Configurations shared with the seed generator                        */
/* ------------------------------------------------------------------ */

/** fuzz_restore: the engine configurations a blob may be for. */
#define FZ_RESTORE_NCFG 6
/** Fill cfg with restore configuration `variant` % FZ_RESTORE_NCFG
 *  (flow control on; rank, world size, channels, pools, rtr as listed in
 *  fuzz_common.c). */
void fz_restore_config(unsigned variant, quay_config *cfg);

#endif /* QUAY_FUZZ_H */
