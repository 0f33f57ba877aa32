/*
 * simworld.c — see simworld.h.
 */
#include "simworld.h"

#include <string.h>

int sw_new(simworld *w, int n, uint64_t seed, sw_cfg_fn tweak, void *arg, int world)
{
    memset(w, 0, sizeof *w);
    if (n < 1 || n > SW_MAX_RANKS)
        return -1;
    w->n = n;
    nicsim_config sc;
    nicsim_config_default(&sc);
    sc.nranks = n;
    sc.seed = seed;
    sc.reorder = 1;
    if (nicsim_new(&sc, &w->sim) != 0)
        return -1;
    for (int r = 0; r < n; r++) {
        quay_config c;
        quay_config_default(&c);
        memset(c.key_secret, 0x5a, sizeof c.key_secret); /* (tests: any fixed secret) */
        c.rank = r;
        c.nranks = n;
        c.eager_max = 256;
        c.frag_size = 512;
        c.max_requests = 512;
        c.max_unexpected = 512;
        c.flags |= QUAY_CFG_CHECK_ORACLE;
        if (tweak != NULL)
            tweak(&c, arg);
        if (quay_engine_new(&c, &w->e[r]) != 0 || nicsim_attach(w->sim, r, w->e[r]) != 0)
            return -1;
        if (world && quay_comm_create(w->e[r], 0, n, NULL, &w->c[r]) != 0)
            return -1;
    }
    return 0;
}

void sw_free(simworld *w)
{
    nicsim_free(w->sim);
    for (int r = 0; r < w->n; r++)
        quay_engine_free(w->e[r]);
    w->sim = NULL;
    w->n = 0;
}

int sw_run(simworld *w)
{
    for (int r = 0; r < w->n; r++)
        nicsim_touch(w->sim, r);
    return nicsim_run(w->sim, 50000000);
}
