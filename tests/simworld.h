/*
 * simworld.h — N engines on nicsim's adversarial scheduler for unit
 * tests (test_coll, test_atomic): create, run to idle, free.
 */
#ifndef QUAY_TEST_SIMWORLD_H
#define QUAY_TEST_SIMWORLD_H

#include <stdint.h>

#include <quay/quay.h>

#include "nicsim.h"

#define SW_MAX_RANKS 33

typedef struct simworld {
    int n;
    nicsim *sim;
    quay_engine *e[SW_MAX_RANKS];
    quay_comm *c[SW_MAX_RANKS]; /* the world (context 0), if asked for */
} simworld;

/** Adjusts rank r's config before its engine is created. */
typedef void (*sw_cfg_fn)(quay_config *c, void *arg);

/** n engines (reordering links, scheduler seed `seed`), each from
 *  quay_config_default with small pools (eager_max 256, frag_size 512,
 *  512 requests and descriptors, the oracle on) and then `tweak`; with
 *  `world`, a world communicator (context 0) on each. 0 or -1. */
int sw_new(simworld *w, int n, uint64_t seed, sw_cfg_fn tweak, void *arg, int world);
void sw_free(simworld *w);
/** Run until idle; every rank may have actions to pull (calls were made
 *  since the last run). A NICSIM_RUN_* value. */
int sw_run(simworld *w);

#endif
