/*
 * quay-sim — run ordering scenarios on the adversarial simulator, or
 * (quay-sim tables) print the NIC dissertation's tables from the timed one.
 *
 *   quay-sim [--seed S] [--seeds N] [--trace] scenario.scn
 *       run seeds S .. S+N-1 (default: the single seed 1); --trace prints
 *       every event of the (last, or first failing) run; at the end, what
 *       every request got ("rank 1 r1 <- rank 0 tag 3, 10240 bytes, ok").
 *   quay-sim --exhaustive [--max-runs N] [--trace] scenario.scn
 *       enumerate every interleaving, depth first, up to N runs (default
 *       2,000,000). A failure prints its choice list ("choices: 0 2 1 ..."),
 *       and --trace the trace of that run. When N runs end before the
 *       space does, nothing is claimed about the rest: the run says how
 *       many interleavings it ran and exits 3 (depth first varies the last
 *       choices first, so the early ones were hardly explored: seeded runs
 *       sample the whole space).
 *   quay-sim --choices LIST [--trace] scenario.scn
 *       replay one interleaving from a choice list as --exhaustive prints
 *       it (numbers separated by spaces or commas; a leading "choices:" is
 *       skipped), with the options the exhaustive run had; output as for
 *       a seed. Seeds, --exhaustive and --choices exclude each other.
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
 * Exit status: 0 all runs passed, 1 a check failed, 2 usage / parse error,
 * 3 --exhaustive stopped at --max-runs with no failure and the space not
 * exhausted.
 * The scenario language: tests/ordering/README.md.
 */
#include "scn.h"
#include "sim_tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exit statuses (documented in usage() and tests/ordering/README.md). */
enum {
    EXIT_PASSED = 0,
    EXIT_FAILED = 1,
    EXIT_USAGE = 2,
    EXIT_BOUNDED = 3 /* --exhaustive hit --max-runs: not all enumerated */
};

static int usage(void)
{
    fprintf(stderr,
            "usage: quay-sim [--seed S] [--seeds N] [OPTIONS] scenario.scn\n"
            "       quay-sim --exhaustive [--max-runs N] [OPTIONS] scenario.scn\n"
            "       quay-sim --choices LIST [OPTIONS] scenario.scn\n"
            "       quay-sim tables [--model FILE] [--set key=value]... [--max-n N] "
            "[--reps R] [--csv] [--only NAME]... [--only-sim] [--svg DIR]\n"
            "OPTIONS: [--faults SPEC] [--flow none|acknack|credit] "
            "[--rndv copy|get|put|mixed] [--rtr] [--any] [--switches] [--trace]\n"
            "  --exhaustive: every interleaving, up to --max-runs N (default "
            "2000000); a failure prints its choice list\n"
            "  --choices LIST: replay the interleaving of a choice list "
            "--exhaustive printed (same OPTIONS)\n"
            "exit status: 0 all runs passed, 1 a check failed, 2 usage or "
            "parse error (or a choice list that does not fit), 3 --exhaustive "
            "reached --max-runs before the end of the space (no failure among "
            "the runs made; the rest unchecked)\n");
    return EXIT_USAGE;
}

static int num(const char *v, uint64_t *out)
{
    char *end;
    if (v == NULL || *v == '\0' || *v == '-')
        return -1;
    *out = (uint64_t)strtoull(v, &end, 0);
    return *end == '\0' ? 0 : -1;
}

/* A choice list as --exhaustive prints it: "0 2 1", "0,2,1" or
 * "choices: 0 2 1". Returns 0 (*out malloc'd; NULL for an empty list,
 * which replays choice 0 at every step), or -1. */
static int parse_choices(const char *text, uint32_t **out, size_t *n)
{
    const char *p = text;
    uint32_t *v = NULL;
    size_t len = 0, cap = 0;
    *out = NULL;
    *n = 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "choices:", 8) == 0)
        p += 8;
    for (;;) {
        unsigned long long x;
        char *end;
        while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\n')
            p++;
        if (*p == '\0')
            break;
        if (*p < '0' || *p > '9')
            goto bad;
        x = strtoull(p, &end, 10);
        if (x > UINT32_MAX)
            goto bad;
        if (len == cap) {
            uint32_t *nv;
            cap = cap ? cap * 2 : 256;
            nv = realloc(v, cap * sizeof *v);
            if (nv == NULL)
                goto bad;
            v = nv;
        }
        v[len++] = (uint32_t)x;
        p = end;
    }
    *out = v;
    *n = len;
    return 0;
bad:
    free(v);
    return -1;
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

/* --exhaustive: every interleaving, or as many as max_runs allows. */
static int run_exhaustive(scn_runner *r, const scn *s, uint64_t max_runs,
                          int trace)
{
    scn_exh ex;
    scn_opts o;
    size_t j;
    int rc = scn_run_exhaustive(r, max_runs, &ex);
    if (rc < 0) {
        fprintf(stderr, "quay-sim: %s\n", scn_runner_error(r));
        return EXIT_USAGE;
    }
    if (rc == 0 && ex.complete) {
        printf("%s: %" PRIu64 " interleavings (all of them), all passed "
               "(longest %zu steps)\n",
               scn_name(s), ex.runs, ex.max_depth);
        return EXIT_PASSED;
    }
    if (rc == 0) {
        printf("%s: stopped at --max-runs %" PRIu64 ": %" PRIu64
               " interleavings run, none failed, but the space was not "
               "exhausted (bounded: not all enumerated; the rest is "
               "unchecked; longest %zu steps)\n",
               scn_name(s), max_runs, ex.runs, ex.max_depth);
        return EXIT_BOUNDED;
    }
    printf("%s: interleaving %" PRIu64 " FAILED: %s\nchoices:", scn_name(s),
           ex.runs, scn_runner_error(r));
    for (j = 0; j < ex.fail_len; j++)
        printf(" %u", ex.fail_script[j]);
    printf("\n");
    if (trace) {
        memset(&o, 0, sizeof o);
        o.trace = stdout;
        scn_run_script(r, ex.fail_script, ex.fail_len, &o);
    }
    printf("summary of interleaving %" PRIu64 ":\n", ex.runs);
    scn_print_summary(r, stdout);
    return EXIT_FAILED;
}

/* --choices: the one interleaving a choice list names. */
static int run_choices(scn_runner *r, const scn *s, const uint32_t *script,
                       size_t n, int trace)
{
    scn_opts o;
    int rc;
    memset(&o, 0, sizeof o);
    o.trace = trace ? stdout : NULL;
    rc = scn_run_script(r, script, n, &o);
    if (rc < 0) {
        fprintf(stderr, "quay-sim: %s\n", scn_runner_error(r));
        return EXIT_USAGE;
    }
    if (scn_runner_diverged(r)) {
        /* not a failure of the engines: the list is not this run's */
        fprintf(stderr,
                "quay-sim: --choices does not fit %s: %s (the list must "
                "come from --exhaustive on this scenario, with the same "
                "options)\n",
                scn_name(s), scn_runner_error(r));
        return EXIT_USAGE;
    }
    if (rc > 0)
        printf("%s: choices (%zu) FAILED: %s\n", scn_name(s), n,
               scn_runner_error(r));
    else
        printf("%s: choices (%zu) passed\n", scn_name(s), n);
    printf("summary of the choices:\n");
    scn_print_summary(r, stdout);
    return rc > 0 ? EXIT_FAILED : EXIT_PASSED;
}

/* Seeds seed .. seed+seeds-1; the last (or first failing) one is shown. */
static int run_seeds(scn_runner *r, const scn *s, uint64_t seed,
                     uint64_t seeds, int trace)
{
    uint64_t passed = 0, last = seed + seeds - 1, k;
    scn_opts o;
    int rc = 0;
    memset(&o, 0, sizeof o);
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
    if (rc < 0) {
        fprintf(stderr, "quay-sim: seed %" PRIu64 ": %s\n", last,
                scn_runner_error(r));
        return EXIT_USAGE;
    }
    if (rc != 0) {
        printf("%s: seed %" PRIu64 " FAILED: %s\n", scn_name(s), last,
               scn_runner_error(r));
        if (trace && o.trace == NULL) {
            o.trace = stdout;
            scn_run_seed(r, last, &o);
        }
    } else {
        printf("%s: %" PRIu64 " seed%s passed (%" PRIu64 "..%" PRIu64 ")\n",
               scn_name(s), passed, passed == 1 ? "" : "s", seed, last);
    }
    printf("summary of seed %" PRIu64 ":\n", last);
    scn_print_summary(r, stdout);
    return rc != 0 ? EXIT_FAILED : EXIT_PASSED;
}

int main(int argc, char **argv)
{
    uint64_t seed = 1, seeds = 1, max_runs = 2000000;
    int trace = 0, exhaustive = 0, i, rc, flow = -1, switches = 0, rndv = -1, rtr = -1;
    int seeded = 0, bounded = 0;
    const char *file = NULL, *faults = NULL, *choices = NULL;
    uint32_t *script = NULL;
    size_t nscript = 0;
    char err[512];
    scn *s;
    scn_runner *r;

    if (argc > 1 && strcmp(argv[1], "tables") == 0)
        return sim_tables_main(argc - 1, argv + 1);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            if (num(argv[++i], &seed) != 0)
                return usage();
            seeded = 1;
        } else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) {
            if (num(argv[++i], &seeds) != 0 || seeds == 0)
                return usage();
            seeded = 1;
        } else if (strcmp(argv[i], "--max-runs") == 0 && i + 1 < argc) {
            if (num(argv[++i], &max_runs) != 0 || max_runs == 0)
                return usage();
            bounded = 1;
        } else if (strcmp(argv[i], "--choices") == 0 && i + 1 < argc) {
            choices = argv[++i];
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
    /* one way of choosing interleavings per invocation */
    if (file == NULL || (exhaustive && (seeded || choices != NULL)) ||
        (choices != NULL && seeded) || (bounded && !exhaustive))
        return usage();
    if (choices != NULL && parse_choices(choices, &script, &nscript) != 0) {
        fprintf(stderr, "quay-sim: --choices: not a choice list: '%s'\n",
                choices);
        return usage();
    }
    if (scn_parse_file(file, &s, err, sizeof err) != 0) {
        fprintf(stderr, "quay-sim: %s\n", err);
        free(script);
        return EXIT_USAGE;
    }
    if (scn_runner_new(s, &r) != 0) {
        fprintf(stderr, "quay-sim: out of memory\n");
        scn_free(s);
        free(script);
        return EXIT_USAGE;
    }
    if (faults != NULL &&
        scn_runner_set_faults(r, faults, err, sizeof err) != 0) {
        fprintf(stderr, "quay-sim: %s\n", err);
        scn_runner_free(r);
        scn_free(s);
        free(script);
        return EXIT_USAGE;
    }
    scn_runner_set_flow(r, flow);
    scn_runner_set_rndv(r, rndv);
    scn_runner_set_rtr(r, rtr);
    scn_runner_set_switches(r, switches);

    if (exhaustive)
        rc = run_exhaustive(r, s, max_runs, trace);
    else if (choices != NULL)
        rc = run_choices(r, s, script, nscript, trace);
    else
        rc = run_seeds(r, s, seed, seeds, trace);
    if (scn_runner_faults_active(r))
        print_net(r);
    scn_runner_free(r);
    scn_free(s);
    free(script);
    return rc;
}
