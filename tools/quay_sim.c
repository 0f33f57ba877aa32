/*
 * quay-sim — run ordering scenarios on the adversarial simulator, or
 * (quay-sim tables) print the NIC dissertation's tables from the timed one.
 *
 *   quay-sim [--seed S] [--seeds N] [--trace] scenario.scn
 *       run seeds S .. S+N-1 (default: the single seed 1); --trace prints
 *       every event of the (last, or first failing) run; at the end, what
 *       every request got ("rank 1 r1 <- rank 0 tag 3, 10240 bytes, ok").
 *   quay-sim --exhaustive [--max-runs N] [--trace] scenario.scn
 *       enumerate every interleaving (up to N runs).
 *   --faults SPEC  inject network faults (drop, dup, corrupt, delay,
 *       reorder, stall, blackhole, kill), replacing the scenario's own
 *       `config faults=`; "none" turns them off. Syntax:
 *       tests/ordering/README.md. The network counters of the last run
 *       are printed after the summary.
 *   --flow none|acknack|credit  flow control (replaces the scenario's
 *       `config flow=`); acknack is needed to survive drop / dup / corrupt.
 *   --rndv copy|get|put|mixed  rendezvous data by DATA packets or RDMA
 *       (GET, PUT, or each rank's mode drawn per seed), replacing the
 *       scenario's `config rndv=`.
 *   --rtr  receiver-initiated transfers (RTR / SC) on every engine.
 *   --any  the same with ANY_SOURCE arbitration (rtr_any).
 *   --switches  with flow control: context switches at random points.
 *
 *   quay-sim tables [--model FILE] [--set key=value]... [--max-n N]
 *                   [--reps R] [--csv] [--only NAME]... [--only-sim] [--svg DIR]
 *       the NIC dissertation's tables on nicsim's timed mode: barrier,
 *       allreduce (host CPU time and utilisation), barrier under skew, MCS
 *       lock, application-bypass broadcast vs skew and vs N, multi-send,
 *       single remote atomics, the simulator's speed; host-based vs
 *       NIC-based, simulated time. --svg DIR also writes SVG charts.
 *       Options and tables: tools/sim_tables.c. (A scenario file named
 *       "tables" is run as ./tables.)
 *
 * Exit status: 0 all runs passed, 1 a check failed, 2 usage / parse error.
 * The scenario language: tests/ordering/README.md.
 */
#include "scn.h"
#include "sim_tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr,
            "usage: quay-sim [--seed S] [--seeds N] [--exhaustive] "
            "[--max-runs N] [--faults SPEC] [--flow none|acknack|credit] [--rndv copy|get|put|mixed] [--rtr] [--any] [--switches] "
            "[--trace] scenario.scn\n"
            "       quay-sim tables [--model FILE] [--set key=value]... [--max-n N] "
            "[--reps R] [--csv] [--only NAME]... [--only-sim] [--svg DIR]\n");
    return 2;
}

static int num(const char *v, uint64_t *out)
{
    char *end;
    if (v == NULL || *v == '\0' || *v == '-')
        return -1;
    *out = (uint64_t)strtoull(v, &end, 0);
    return *end == '\0' ? 0 : -1;
}

/* Fault counters of the last run. */
static void print_net(const scn_runner *r)
{
    nicsim_stats st;
    char spec[512];
    scn_runner_faults_text(r, spec, sizeof spec);
    scn_runner_net_stats(r, &st);
    printf("faults %s: %" PRIu64 " packets sent, %" PRIu64 " delivered, %"
           PRIu64 " rejected; dropped %" PRIu64 " (+%" PRIu64
           " black hole, %" PRIu64 " killed), dup %" PRIu64
           " (accepted %" PRIu64 ", rejected %" PRIu64 "), corrupt %" PRIu64
           " (accepted %" PRIu64 ", rejected %" PRIu64 "), delayed %" PRIu64
           ", reordered %" PRIu64 ", stalls %" PRIu64 ", kills %" PRIu64 "\n",
           spec, st.sends, st.deliveries, st.rejects, st.drops, st.blackholed,
           st.killed_pkts, st.dups, st.dup_accepted, st.dup_rejected,
           st.corrupts, st.corrupt_accepted, st.corrupt_rejected, st.delays,
           st.reorders, st.stalls, st.kills);
}

int main(int argc, char **argv)
{
    uint64_t seed = 1, seeds = 1, max_runs = 2000000, k;
    int trace = 0, exhaustive = 0, i, rc = 0, flow = -1, switches = 0, rndv = -1, rtr = -1;
    const char *file = NULL, *faults = NULL;
    char err[512];
    scn *s;
    scn_runner *r;
    scn_opts o;

    if (argc > 1 && strcmp(argv[1], "tables") == 0)
        return sim_tables_main(argc - 1, argv + 1);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            if (num(argv[++i], &seed) != 0)
                return usage();
        } else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) {
            if (num(argv[++i], &seeds) != 0 || seeds == 0)
                return usage();
        } else if (strcmp(argv[i], "--max-runs") == 0 && i + 1 < argc) {
            if (num(argv[++i], &max_runs) != 0)
                return usage();
        } else if (strcmp(argv[i], "--faults") == 0 && i + 1 < argc) {
            faults = argv[++i];
        } else if (strcmp(argv[i], "--flow") == 0 && i + 1 < argc) {
            if (scn_flow_parse(argv[++i], &flow) != 0)
                return usage();
        } else if (strcmp(argv[i], "--rndv") == 0 && i + 1 < argc) {
            if (scn_rndv_parse(argv[++i], &rndv) != 0)
                return usage();
        } else if (strcmp(argv[i], "--rtr") == 0) {
            rtr = 1;
        } else if (strcmp(argv[i], "--any") == 0) {
            rtr = 2;
        } else if (strcmp(argv[i], "--switches") == 0) {
            switches = 1;
        } else if (strcmp(argv[i], "--trace") == 0) {
            trace = 1;
        } else if (strcmp(argv[i], "--exhaustive") == 0) {
            exhaustive = 1;
        } else if (argv[i][0] == '-' || file != NULL) {
            return usage();
        } else {
            file = argv[i];
        }
    }
    if (file == NULL)
        return usage();
    if (scn_parse_file(file, &s, err, sizeof err) != 0) {
        fprintf(stderr, "quay-sim: %s\n", err);
        return 2;
    }
    if (scn_runner_new(s, &r) != 0) {
        fprintf(stderr, "quay-sim: out of memory\n");
        scn_free(s);
        return 2;
    }
    if (faults != NULL &&
        scn_runner_set_faults(r, faults, err, sizeof err) != 0) {
        fprintf(stderr, "quay-sim: %s\n", err);
        scn_runner_free(r);
        scn_free(s);
        return 2;
    }
    scn_runner_set_flow(r, flow);
    scn_runner_set_rndv(r, rndv);
    scn_runner_set_rtr(r, rtr);
    scn_runner_set_switches(r, switches);
    memset(&o, 0, sizeof o);

    if (exhaustive) {
        scn_exh ex;
        rc = scn_run_exhaustive(r, max_runs, &ex);
        if (rc == 0) {
            printf("%s: %" PRIu64 " interleavings%s, all passed (longest "
                   "%zu steps)\n",
                   scn_name(s), ex.runs,
                   ex.complete ? "" : " (bounded: not all enumerated)",
                   ex.max_depth);
        } else if (rc > 0) {
            size_t j;
            printf("%s: interleaving %" PRIu64 " FAILED: %s\nchoices:",
                   scn_name(s), ex.runs, scn_runner_error(r));
            for (j = 0; j < ex.fail_len; j++)
                printf(" %u", ex.fail_script[j]);
            printf("\n");
            if (trace) {
                o.trace = stdout;
                scn_run_script(r, ex.fail_script, ex.fail_len, &o);
            }
        }
    } else {
        uint64_t passed = 0, last = seed + seeds - 1;
        for (k = seed; k < seed + seeds; k++) {
            /* only the run that will be shown is traced */
            o.trace = (trace && k == last) ? stdout : NULL;
            rc = scn_run_seed(r, k, &o);
            if (rc != 0) {
                last = k;
                break;
            }
            passed++;
        }
        if (rc != 0) {
            printf("%s: seed %" PRIu64 " FAILED: %s\n", scn_name(s), last,
                   scn_runner_error(r));
            if (trace && o.trace == NULL) {
                o.trace = stdout;
                scn_run_seed(r, last, &o);
            }
        } else {
            printf("%s: %" PRIu64 " seed%s passed (%" PRIu64 "..%" PRIu64
                   ")\n",
                   scn_name(s), passed, passed == 1 ? "" : "s", seed, last);
        }
        printf("summary of seed %" PRIu64 ":\n", last);
        scn_print_summary(r, stdout);
    }
    if (scn_runner_faults_active(r))
        print_net(r);
    scn_runner_free(r);
    scn_free(s);
    return rc == 0 ? 0 : (rc > 0 ? 1 : 2);
}
