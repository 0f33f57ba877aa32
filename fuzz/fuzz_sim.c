/*
 * fuzz_sim.c — N engines (2..8) on the adversarial simulator; the input
 * drives the program (motifs of calls, fuzz_sim.h / sim_gen.c), the
 * configuration (flow control, rendezvous and receiver-initiated modes,
 * collective algorithms, bounds, network faults, context switches) and
 * the schedule (every scheduler choice: which rank calls next, which
 * packet is delivered, which op_done fires, which timer, which switch).
 *
 * The run and its checks are the ordering runner's (tests/ordering):
 * every request completes exactly once, payloads and statuses are right,
 * MPI's non-overtaking order holds at every receiver, nothing is lost or
 * duplicated, cancels and ready sends are consistent, collectives give
 * the oracle's results, the fast matcher agrees with the linear oracle
 * (QUAY_CFG_CHECK_ORACLE), no deadlock or livelock, every engine clean at
 * the end, saved contexts restore to the same bytes. On top, per engine,
 * a counting allocator: peak memory within the creation footprint plus
 * twice the unexpected-bytes budget plus 1 MiB, nothing left after free.
 * Any failure prints the scenario, the schedule and the run's trace, and
 * aborts.
 */
#include "fuzz.h"
#include "fuzz_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scn.h"

#define SIM_MEM_SLACK (1u << 20)

typedef struct sim_mem {
    fz_mem mem[8];
    size_t base[8];  /* what an engine of that configuration holds when new */
    size_t budget[8];/* its unexpected_bytes_max */
    int used[8];
} sim_mem;

/* Before each engine is created: count its allocations, and measure what
 * a fresh engine of the same configuration holds. */
static void cfg_hook(void *ctx, int rank, quay_config *qc)
{
    sim_mem *m = ctx;
    fz_mem probe;
    quay_engine *e = NULL;
    quay_config c = *qc;
    if (rank < 0 || rank >= 8)
        fz_fail("config hook for rank %d", rank);
    memset(&probe, 0, sizeof probe);
    fz_mem_use(&probe, &c);
    if (quay_engine_new(&c, &e) == 0) {
        m->base[rank] = probe.live;
        quay_engine_free(e);
    }
    memset(&m->mem[rank], 0, sizeof m->mem[rank]);
    m->budget[rank] = qc->unexpected_bytes_max;
    m->used[rank] = 1;
    fz_mem_use(&m->mem[rank], qc);
}

static void report(const sim_prog *p, scn *s, const char *what)
{
    scn_runner *r = NULL;
    scn_opts o;
    fprintf(stderr, "fuzz_sim: %s\n---- scenario (seed %llu, %zu schedule bytes%s) ----\n%s----\n",
            what, (unsigned long long)p->seed, p->nsched, p->switches ? ", switches" : "",
            p->text);
    if (getenv("FUZZ_NO_TRACE") == NULL && scn_runner_new(s, &r) == 0) {
        memset(&o, 0, sizeof o);
        o.trace = stderr;
        scn_runner_set_switches(r, p->switches);
        fprintf(stderr, "---- trace of the same run ----\n");
        scn_run_bytes(r, p->sched, p->nsched, p->seed, &o);
        fprintf(stderr, "---- %s\n", scn_runner_error(r));
        scn_runner_free(r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sim_prog p;
    scn *s = NULL;
    scn_runner *r = NULL;
    sim_mem *m;
    char err[512];
    int rc;

    fz_harness = "fuzz_sim";
    if (sim_generate(data, size, &p) != 0)
        fz_fail("out of memory");
    if (fz_verbose())
        fprintf(stderr, "%s", p.text);
    if (scn_parse_string("fuzz", p.text, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s", p.text);
        fz_fail("the generated scenario does not parse (a harness bug): %s", err);
    }
    m = calloc(1, sizeof *m);
    if (m == NULL || scn_runner_new(s, &r) != 0)
        fz_fail("out of memory");
    scn_runner_set_switches(r, p.switches);
    scn_runner_set_config_hook(r, cfg_hook, m);
    rc = scn_run_bytes(r, p.sched, p.nsched, p.seed, NULL);
    if (rc != 0) {
        char what[1200];
        snprintf(what, sizeof what, "run failed: %s",
                 rc < 0 ? "could not be set up" : scn_runner_error(r));
        scn_runner_free(r);
        report(&p, s, what);
        fz_fail("%s", what);
    }
    if (fz_verbose()) {
        uint64_t forced = 0, sw = scn_runner_switches(r, &forced);
        fprintf(stderr, "fuzz_sim: %llu steps, %llu switches (%llu forced), %llu timer fires\n",
                (unsigned long long)scn_runner_steps(r), (unsigned long long)sw,
                (unsigned long long)forced, (unsigned long long)scn_runner_timer_fires(r));
    }
    scn_runner_free(r);
    for (int k = 0; k < 8; k++) {
        if (!m->used[k])
            continue;
        size_t bound = m->base[k] + 2 * m->budget[k] + SIM_MEM_SLACK;
        if (m->mem[k].peak > bound) {
            report(&p, s, "memory bound");
            fz_fail("rank %d: memory peak %zu bytes, bound %zu (creation %zu)", k,
                    m->mem[k].peak, bound, m->base[k]);
        }
        if (m->mem[k].live != 0)
            fz_fail("rank %d: %zu bytes left after quay_engine_free", k, m->mem[k].live);
    }
    free(m);
    scn_free(s);
    sim_prog_free(&p);
    return 0;
}
