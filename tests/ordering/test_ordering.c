/*
 * test_ordering — CTest driver for ordering scenarios (TAP output).
 *
 *   test_ordering [--seeds N] [--seed S] file.scn ...
 *       run seeds S .. S+N-1 (default S = 1, N = 10000; the environment
 *       variable QUAY_SEEDS, when set, replaces N)
 *   test_ordering --exhaustive [--max-runs N] file.scn ...
 *       enumerate every interleaving (bounded by N runs, default 2000000)
 *   --faults SPEC  inject network faults, replacing each scenario's own
 *       `config faults=` (SPEC "none": no faults); the syntax is in
 *       tests/ordering/README.md. Losing faults (drop, dup, corrupt)
 *       need --flow acknack.
 *   --flow none|acknack|credit  flow control for every scenario, replacing its
 *       `config flow=` (acknack: retransmission timers on a virtual
 *       clock; see scn.h scn_runner_set_flow).
 *   --rndv copy|get|put|mixed  rendezvous data by DATA packets or RDMA
 *       (GET, PUT, or each rank's mode drawn per seed), replacing the
 *       scenario's `config rndv=`.
 *   --rtr  receiver-initiated transfers (RTR / SC) on every engine.
 *   --any  the same with ANY_SOURCE arbitration (rtr_any).
 *   --switches  with flow control: context switches (quiesce, stable,
 *       resume) at random points (scn.h scn_runner_set_switches).
 *
 * On the first failure it prints the scenario, the seed (or the choice
 * script) and the trace of that run, as TAP comments, and stops.
 */
#include "scn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(void)
{
    fprintf(stderr,
            "usage: test_ordering [--seeds N] [--seed S] [--exhaustive] "
            "[--max-runs N] [--faults SPEC] [--flow none|acknack|credit] [--rndv copy|get|put|mixed] [--rtr] [--any] "
            "[--switches] file.scn ...\n");
}

static int parse_num(const char *v, uint64_t *out)
{
    char *end;
    unsigned long long x;
    if (v == NULL || *v == '\0' || *v == '-')
        return -1;
    x = strtoull(v, &end, 0);
    if (*end != '\0')
        return -1;
    *out = (uint64_t)x;
    return 0;
}

/* Copy a temporary trace file to stdout as TAP comments. */
static void dump_comment(FILE *tmp)
{
    char line[1024];
    rewind(tmp);
    while (fgets(line, sizeof line, tmp) != NULL) {
        size_t l = strlen(line);
        printf("# %s%s", line, (l > 0 && line[l - 1] == '\n') ? "" : "\n");
    }
}

static void replay_failure(scn_runner *r, int exhaustive, uint64_t seed,
                           const uint32_t *script, size_t nscript)
{
    FILE *tmp = tmpfile();
    scn_opts o;
    memset(&o, 0, sizeof o);
    if (tmp == NULL) {
        printf("# (cannot open a temporary file for the trace)\n");
        return;
    }
    o.trace = tmp;
    if (exhaustive)
        scn_run_script(r, script, nscript, &o);
    else
        scn_run_seed(r, seed, &o);
    fflush(tmp);
    dump_comment(tmp);
    fclose(tmp);
}

int main(int argc, char **argv)
{
    uint64_t seeds = 10000, seed0 = 1, max_runs = 2000000;
    int exhaustive = 0, i, nfiles = 0, tn = 0, failed = 0;
    const char *env = getenv("QUAY_SEEDS");
    const char *files[256];
    const char *faults = NULL;
    int flow = -1, switches = 0, rndv = -1, rtr = -1;
    const char *rndv_text = NULL;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) {
            if (parse_num(argv[++i], &seeds) != 0)
                return usage(), 2;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            if (parse_num(argv[++i], &seed0) != 0)
                return usage(), 2;
        } else if (strcmp(argv[i], "--max-runs") == 0 && i + 1 < argc) {
            if (parse_num(argv[++i], &max_runs) != 0)
                return usage(), 2;
        } else if (strcmp(argv[i], "--faults") == 0 && i + 1 < argc) {
            nicsim_fault_spec fs;
            char ferr[256];
            faults = argv[++i];
            if (nicsim_fault_spec_parse(faults, &fs, ferr, sizeof ferr) != 0) {
                fprintf(stderr, "test_ordering: %s\n", ferr);
                return usage(), 2;
            }
        } else if (strcmp(argv[i], "--flow") == 0 && i + 1 < argc) {
            if (scn_flow_parse(argv[++i], &flow) != 0)
                return usage(), 2;
        } else if (strcmp(argv[i], "--rtr") == 0) {
            rtr = 1;
        } else if (strcmp(argv[i], "--any") == 0) {
            rtr = 2;
        } else if (strcmp(argv[i], "--rndv") == 0 && i + 1 < argc) {
            rndv_text = argv[++i];
            if (scn_rndv_parse(rndv_text, &rndv) != 0)
                return usage(), 2;
        } else if (strcmp(argv[i], "--switches") == 0) {
            switches = 1;
        } else if (strcmp(argv[i], "--exhaustive") == 0) {
            exhaustive = 1;
        } else if (argv[i][0] == '-') {
            usage();
            return 2;
        } else if (nfiles < 256) {
            files[nfiles++] = argv[i];
        }
    }
    if (nfiles == 0) {
        usage();
        return 2;
    }
    if (env != NULL && *env != '\0') {
        uint64_t v;
        if (parse_num(env, &v) == 0 && v > 0)
            seeds = v;
    }

    printf("1..%d\n", nfiles);
    for (i = 0; i < nfiles && !failed; i++) {
        char err[512], fault_arg[600];
        scn *s = NULL;
        scn_runner *r = NULL;
        clock_t c0 = clock();
        double secs;
        tn++;
        if (scn_parse_file(files[i], &s, err, sizeof err) != 0) {
            printf("not ok %d - %s: %s\n", tn, files[i], err);
            failed = 1;
            break;
        }
        if (scn_runner_new(s, &r) != 0) {
            printf("not ok %d - %s: out of memory\n", tn, scn_name(s));
            scn_free(s);
            failed = 1;
            break;
        }
        if (faults != NULL &&
            scn_runner_set_faults(r, faults, err, sizeof err) != 0) {
            printf("not ok %d - %s: %s\n", tn, scn_name(s), err);
            scn_runner_free(r);
            scn_free(s);
            failed = 1;
            break;
        }
        scn_runner_set_flow(r, flow);
        scn_runner_set_rndv(r, rndv);
        scn_runner_set_rtr(r, rtr);
        scn_runner_set_switches(r, switches);
        fault_arg[0] = '\0';
        if (scn_runner_faults_active(r)) {
            scn_runner_faults_text(r, err, sizeof err);
            printf("# %s: faults %s\n", scn_name(s), err);
            snprintf(fault_arg, sizeof fault_arg, " --faults %s", err);
        }
        if (switches)
            snprintf(fault_arg + strlen(fault_arg),
                     sizeof fault_arg - strlen(fault_arg), " --switches");
        if (flow >= 0)
            snprintf(fault_arg + strlen(fault_arg),
                     sizeof fault_arg - strlen(fault_arg), " --flow %s",
                     flow == QUAY_FLOW_CREDIT    ? "credit"
                     : flow == QUAY_FLOW_ACKNACK ? "acknack"
                                                 : "none");
        if (rndv_text != NULL)
            snprintf(fault_arg + strlen(fault_arg),
                     sizeof fault_arg - strlen(fault_arg), " --rndv %s", rndv_text);
        if (rtr > 0)
            snprintf(fault_arg + strlen(fault_arg),
                     sizeof fault_arg - strlen(fault_arg), rtr == 2 ? " --any" : " --rtr");
        if (exhaustive) {
            scn_exh ex;
            int rc = scn_run_exhaustive(r, max_runs, &ex);
            secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
            if (rc == 0) {
                printf("ok %d - %s: %" PRIu64 " interleavings%s, depth <= "
                       "%zu (%.2fs)\n",
                       tn, scn_name(s), ex.runs,
                       ex.complete ? " (all)" : " (bounded, not all)",
                       ex.max_depth, secs);
            } else {
                size_t k;
                printf("not ok %d - %s: interleaving %" PRIu64 " failed: %s\n",
                       tn, scn_name(s), ex.runs, scn_runner_error(r));
                printf("# choice script:");
                for (k = 0; k < ex.fail_len; k++)
                    printf(" %u", ex.fail_script[k]);
                printf("\n# reproduce: quay-sim%s --trace --choices \"",
                       fault_arg);
                for (k = 0; k < ex.fail_len; k++)
                    printf(k ? " %u" : "%u", ex.fail_script[k]);
                printf("\" %s\n# trace of that run:\n", files[i]);
                replay_failure(r, 1, 0, ex.fail_script, ex.fail_len);
                failed = 1;
            }
        } else {
            uint64_t k, steps = 0;
            /* runs in which each outcome occurred at least once */
            uint64_t n_unexp = 0, n_posted = 0, n_scancel = 0, n_slost = 0;
            uint64_t n_rcancel = 0, n_np = 0, n_trunc = 0, n_defer = 0;
            uint64_t n_claim = 0, n_decl = 0;
            /* faults the runs went through, summed */
            uint64_t f_drop = 0, f_dup = 0, f_corrupt = 0, f_timer = 0;
            uint64_t f_retx = 0, f_nack = 0, n_nack = 0, f_sw = 0, f_swf = 0;
            uint64_t f_swr = 0, c_msgs = 0;
            /* seeds with bit 1 set: sends, those taken inline, EBUSY */
            uint64_t i_sends = 0, i_inline = 0, i_busy = 0, i_copied = 0, r_inline = 0, r_busy = 0;
            int rc = 0;
            for (k = 0; k < seeds; k++) {
                scn_outcomes oc;
                nicsim_stats ns;
                rc = scn_run_seed(r, seed0 + k, NULL);
                steps += scn_runner_steps(r);
                if (rc != 0)
                    break;
                scn_runner_net_stats(r, &ns);
                scn_runner_outcomes(r, &oc);
                f_drop += ns.drops;
                f_dup += ns.dups;
                f_corrupt += ns.corrupts;
                f_timer += scn_runner_timer_fires(r);
                f_retx += oc.retransmits;
                f_nack += oc.nacks;
                n_nack += oc.nacks != 0;
                {
                    uint64_t forced = 0;
                    f_sw += scn_runner_switches(r, &forced);
                    f_swf += forced;
                }
                n_unexp += oc.matched_unexpected != 0;
                n_posted += oc.matched_posted != 0;
                n_scancel += oc.sends_cancelled != 0;
                n_slost += oc.sends_cancel_lost != 0;
                n_rcancel += oc.recvs_cancelled != 0;
                n_np += oc.notposted != 0;
                n_trunc += oc.truncated != 0;
                n_defer += oc.deferred != 0;
                n_claim += oc.any_claimed != 0;
                n_decl += oc.any_declined != 0;
                f_swr += oc.switches_refused;
                c_msgs += oc.coll_msgs;
                if ((seed0 + k) & 2)
                    i_sends += oc.sends;
                i_inline += oc.inline_sends;
                i_busy += oc.inline_busy;
                r_inline += oc.recv_inlines;
                r_busy += oc.recv_inline_busy;
                i_copied += oc.copied_sends;
            }
            if (rc == 0)
                printf("# runs with: unexpected-match %" PRIu64
                       ", posted-match %" PRIu64 ", send-cancel won %" PRIu64
                       " / lost %" PRIu64 ", recv cancelled %" PRIu64
                       ", ENOTPOSTED %" PRIu64 ", ETRUNCATE %" PRIu64
                       ", EAGAIN deferral %" PRIu64 "\n",
                       n_unexp, n_posted, n_scancel, n_slost, n_rcancel, n_np,
                       n_trunc, n_defer);
            if (rc == 0 && (n_claim | n_decl))
                printf("# arbitration: runs with a claim %" PRIu64 ", a declined flag %" PRIu64
                       "\n", n_claim, n_decl);
            if (rc == 0 && (f_drop | f_dup | f_corrupt | f_timer | f_nack))
                printf("# faults survived: %" PRIu64 " drops, %" PRIu64
                       " copies, %" PRIu64 " corrupted; %" PRIu64
                       " timer firings, %" PRIu64 " retransmissions, %" PRIu64
                       " NACKs (in %" PRIu64 " runs)\n",
                       f_drop, f_dup, f_corrupt, f_timer, f_retx, f_nack,
                       n_nack);
            if (rc == 0 && switches)
                printf("# context switches: %" PRIu64 " quiesce -> stable -> save, reset, restore -> resume, "
                       "%" PRIu64 " resumed unstable (nothing else could move), %" PRIu64
                       " saves refused (a collective schedule ran)\n",
                       f_sw, f_swf, f_swr);
            if (rc == 0 && i_sends != 0)
                printf("# quay_send_inline (seeds with bit 1 set): %" PRIu64
                       " of %" PRIu64 " sends went inline, %" PRIu64
                       " tries answered EBUSY (posted with quay_isend)\n",
                       i_inline, i_sends, i_busy);
            if (rc == 0 && (r_inline | r_busy))
                printf("# quay_recv_inline (seeds with bit 1 set): %" PRIu64
                       " receives taken at the call, %" PRIu64
                       " tries answered EBUSY (posted with quay_irecv)\n",
                       r_inline, r_busy);
            if (rc == 0 && i_copied != 0)
                printf("# QUAY_CFG_SEND_COPY (seeds with bit 3 set): %" PRIu64
                       " isends complete at the call\n",
                       i_copied);
            if (rc == 0 && c_msgs != 0)
                printf("# collectives: %" PRIu64 " messages matched on collective twins\n",
                       c_msgs);
            secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
            if (rc == 0) {
                printf("ok %d - %s: %" PRIu64 " seeds, %" PRIu64
                       " steps (%.2fs)\n",
                       tn, scn_name(s), seeds, steps, secs);
            } else {
                printf("not ok %d - %s: seed %" PRIu64 ": %s\n", tn,
                       scn_name(s), seed0 + k, scn_runner_error(r));
                printf("# reproduce: quay-sim --seed %" PRIu64
                       "%s --trace %s\n# trace of that run:\n",
                       seed0 + k, fault_arg, files[i]);
                replay_failure(r, 0, seed0 + k, NULL, 0);
                failed = 1;
            }
        }
        fflush(stdout);
        scn_runner_free(r);
        scn_free(s);
    }
    return failed ? 1 : 0;
}
