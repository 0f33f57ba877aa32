/*
 * fault_spec.h — fault specifications as text, for command lines and
 * scenario files: one string sets a simulator's link and stall faults
 * (nicsim_config) and schedules its black holes and kills.
 */
#ifndef QUAY_NICSIM_FAULT_SPEC_H
#define QUAY_NICSIM_FAULT_SPEC_H

#include "nicsim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NICSIM_SPEC_MAX_EVENTS 16

/**
 * A parsed fault spec:
 *
 *   none | ITEM[,ITEM]...
 *   ITEM: drop:P  dup:P  corrupt:P  delay:P  reorder:P  stall:P
 *         delay_max:K  stall_max:K
 *         blackhole:S>D[@T]   (link S -> D black-holed from clock T, 0)
 *         kill:R[@T]          (rank R killed at clock T, default 0)
 *   P: a probability 0..1 ("0.01", "1e-3", "1"), or "N%", or "Nppm"
 *
 * e.g. "drop:0.01,dup:0.01,corrupt:0.001,delay:0.05" or
 * "kill:2@300,blackhole:0>1@50". Repeated keys: the last one wins;
 * blackhole and kill items accumulate (NICSIM_SPEC_MAX_EVENTS each).
 */
typedef struct nicsim_fault_spec {
    nicsim_faults link; /**< every link (nicsim_config.faults) */
    uint32_t stall_ppm; /**< every destination */
    uint32_t stall_max;
    uint32_t nblackhole;
    struct {
        int32_t src, dst;
        uint64_t at;
    } blackhole[NICSIM_SPEC_MAX_EVENTS];
    uint32_t nkill;
    struct {
        int32_t rank;
        uint64_t at;
    } kill[NICSIM_SPEC_MAX_EVENTS];
} nicsim_fault_spec;

/** Parse `text` into `spec` (zeroed first). Returns 0, or QUAY_EINVAL
 *  with a message in `err` (when err != NULL). */
int nicsim_fault_spec_parse(const char *text, nicsim_fault_spec *spec,
                            char *err, size_t errlen);

/** 1 if the spec injects anything. */
int nicsim_fault_spec_active(const nicsim_fault_spec *spec);

/** Write the canonical text of `spec` ("none" when inactive) into `buf`;
 *  parsing it gives the same spec. Returns the length it needed
 *  (snprintf-style). */
size_t nicsim_fault_spec_format(const nicsim_fault_spec *spec, char *buf,
                                size_t len);

/** Copy the link and stall knobs of `spec` into `cfg` (before nicsim_new). */
void nicsim_fault_spec_to_config(const nicsim_fault_spec *spec,
                                 nicsim_config *cfg);

/** Schedule the spec's black holes and kills on `sim` (right after
 *  nicsim_new). Returns 0 or QUAY_ERANK (a rank >= nranks). */
int nicsim_fault_spec_schedule(nicsim *sim, const nicsim_fault_spec *spec);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_NICSIM_FAULT_SPEC_H */
