/*
 * sim_tables.c — `quay-sim tables` (and bench/bench_timed): collectives,
 * locks and atomics on nicsim's timed mode (adapters/nicsim/timed.h), the
 * NIC dissertation's comparisons of host-based and NIC-based (offloaded)
 * operations in simulated time, and the simulator's own speed.
 *
 *   quay-sim tables [--model FILE] [--set key=value]... [--max-n N] [--reps R]
 *                   [--csv] [--only NAME]... [--only-sim] [--svg DIR]
 *
 * Tables (--only NAME runs only the named ones; --only-sim = --only sim):
 *   1. barrier: barrier latency vs N (2 .. max-n): host-based
 *      dissemination, pairwise exchange and tree, and the same offloaded
 *      to NIC agents; factor of improvement (FoI) = host / NIC.
 *   2. allreduce: allreduce of one int64 vs N: latency, host CPU time per
 *      call and host CPU utilisation (busy / elapsed over back-to-back calls).
 *   3. skew: barrier under skew: every rank computes U(0, D) before each
 *      barrier; time spent in the barrier, host vs NIC.
 *   4. lock: the MCS lock on remote atomics [NIC ch. 5]: one acquire +
 *      release vs contenders, atomics on the target NIC vs a host server thread.
 *   6. bypass: application-bypass broadcast under skew [NIC ch. 6] at 32
 *      ranks: after a barrier the root broadcasts at once, the others
 *      compute U(0, D) first; mean time inside the broadcast call, with
 *      and without bypass, eager and rendezvous sizes.
 *   7. multi: a 4 KiB broadcast (binomial, and the postal-model tree) with
 *      and without the transport's multi-send [NIC ch. 2].
 *   8. bypass-n: table 6's 8-byte broadcast at D = 1 ms vs N (2 .. 128).
 *   9. atomic: one remote fetch-and-add, compare-and-swap or swap at a
 *      time, uncontended: executed by the target NIC vs a host server thread.
 *  10. bypass-reduce: application-bypass reduce under skew at 32 ranks:
 *      the root (rank 0) calls at once, the others compute U(0, D) first;
 *      mean time inside the reduce call at the others, eager and
 *      rendezvous sizes.
 *   5. sim: the simulator: events and packet deliveries per wall second,
 *      the wall time of a max-n-rank barrier (printed last; wall clock).
 *
 * --model FILE loads nicsim_model_load's "key = value" file over the
 * default model; each --set key=value then overrides one key (applied
 * after the file, in order). The lock and atomic tables set atomic_host
 * themselves. --svg DIR writes charts (DIR is created): barrier_latency,
 * barrier_foi, allreduce_cpu, bypass_skew, bypass_n (.svg), each from the
 * tables that ran.
 */
#include "sim_tables.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <quay/quay_coll.h>

#include "sim_model.h"
#include "sim_runs.h"
#include "sim_util.h"
#include "svg.h"

/* Rank counts double from 2: 2^1 .. 2^20 at most. */
enum { MAX_N_LIMIT = 1 << 20, MAX_POINTS = 21 };

typedef struct tables {
    nicsim_model model;
    int max_n, reps, csv;
    const char *svg_dir; /* NULL: no charts */
} tables;

static sim_coll_spec spec(const tables *tb, int n, enum sim_kind kind)
{
    sim_coll_spec s;
    memset(&s, 0, sizeof s);
    s.model = &tb->model;
    s.n = n;
    s.reps = tb->reps;
    s.kind = kind;
    return s;
}

static void chart_write(const tables *tb, const char *file, const svg_chart *c)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tb->svg_dir, file);
    if (svg_write(path, c) != 0)
        sim_die("%s: %s", path, strerror(errno));
    fprintf(stderr, "quay-sim tables: wrote %s\n", path);
}

/* ---- 1. barrier ------------------------------------------------------------------ */

static const char *const barrier_alg_name[] = {"", "dissemination", "pairwise", "tree"};

static void table_barrier(const tables *tb)
{
    double xs[MAX_POINTS], host[3][MAX_POINTS], nic[3][MAX_POINTS], foi[3][MAX_POINTS];
    size_t np = 0;
    printf("\n## 1. Barrier latency (simulated us per barrier, %d barriers)\n\n", tb->reps);
    if (tb->csv)
        printf("csv,barrier,n,alg,host_us,nic_us,foi\n");
    else
        printf("| N | algorithm | host-based | NIC-based | FoI |\n|---:|---|---:|---:|---:|\n");
    for (int n = 2; n <= tb->max_n; n *= 2, np++) {
        xs[np] = n;
        for (uint32_t alg = 1; alg <= 3; alg++) {
            sim_coll_spec s = spec(tb, n, SIM_BARRIER);
            s.barrier_alg = alg;
            sim_result h = sim_coll_run(&s);
            s.offload = 1;
            sim_result x = sim_coll_run(&s);
            double f = h.per_op_us / x.per_op_us;
            host[alg - 1][np] = h.per_op_us;
            nic[alg - 1][np] = x.per_op_us;
            foi[alg - 1][np] = f;
            printf(tb->csv ? "csv,barrier,%d,%s,%.2f,%.2f,%.2f\n"
                           : "| %d | %s | %.2f | %.2f | %.2f |\n",
                   n, barrier_alg_name[alg], h.per_op_us, x.per_op_us, f);
        }
    }
    if (tb->svg_dir == NULL)
        return;
    svg_series lat[6], fs[3];
    char names[6][40];
    for (int a = 0; a < 3; a++) {
        snprintf(names[2 * a], sizeof names[0], "%s, host", barrier_alg_name[a + 1]);
        snprintf(names[2 * a + 1], sizeof names[0], "%s, NIC", barrier_alg_name[a + 1]);
        lat[2 * a] = (svg_series){names[2 * a], xs, host[a], np, a, 1};
        lat[2 * a + 1] = (svg_series){names[2 * a + 1], xs, nic[a], np, a, 0};
        fs[a] = (svg_series){barrier_alg_name[a + 1], xs, foi[a], np, a, 0};
    }
    chart_write(tb, "barrier_latency.svg",
                &(svg_chart){"Barrier latency: host-based (dashed) vs NIC-based", "ranks (N)",
                             "simulated us per barrier", SVG_LOG2, SVG_LINEAR, lat, 6});
    chart_write(tb, "barrier_foi.svg",
                &(svg_chart){"Barrier: factor of improvement (host / NIC)", "ranks (N)",
                             "FoI", SVG_LOG2, SVG_LINEAR, fs, 3});
}

/* ---- 2. allreduce ---------------------------------------------------------------- */

static void table_allreduce(const tables *tb)
{
    double xs[MAX_POINTS], hu[MAX_POINTS], xu[MAX_POINTS];
    size_t np = 0;
    printf("\n## 2. Allreduce of one int64 (us per call; host CPU at rank 1: us per call, and "
           "%% of the elapsed time over %d back-to-back calls)\n\n", tb->reps);
    if (tb->csv)
        printf("csv,allreduce,n,host_us,nic_us,host_cpu_us,nic_cpu_us,host_cpu_pct,"
               "nic_cpu_pct\n");
    else
        printf("| N | host-based | NIC-based | host CPU, host-based | host CPU, NIC-based | "
               "CPU FoI | CPU %%, host-based | CPU %%, NIC-based |\n"
               "|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int n = 2; n <= tb->max_n; n *= 4, np++) {
        sim_coll_spec s = spec(tb, n, SIM_ALLREDUCE);
        sim_result h = sim_coll_run(&s);
        s.offload = 1;
        sim_result x = sim_coll_run(&s);
        xs[np] = n;
        hu[np] = 100 * h.host_util;
        xu[np] = 100 * x.host_util;
        if (tb->csv)
            printf("csv,allreduce,%d,%.2f,%.2f,%.2f,%.2f,%.1f,%.1f\n", n, h.per_op_us,
                   x.per_op_us, h.host_us, x.host_us, hu[np], xu[np]);
        else
            printf("| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f |\n", n, h.per_op_us,
                   x.per_op_us, h.host_us, x.host_us, h.host_us / x.host_us, hu[np], xu[np]);
    }
    if (tb->svg_dir == NULL)
        return;
    svg_series s[2] = {{"host-based", xs, hu, np, 0, 1}, {"NIC-based", xs, xu, np, 1, 0}};
    chart_write(tb, "allreduce_cpu.svg",
                &(svg_chart){"Allreduce (1 x int64): host CPU utilisation", "ranks (N)",
                             "host CPU busy, % of elapsed time", SVG_LOG2, SVG_LINEAR, s, 2});
}

/* ---- 3. barrier under skew ------------------------------------------------------- */

static void table_skew(const tables *tb)
{
    printf("\n## 3. Barrier under skew (%d barriers, each rank computes U(0, D) before each; "
           "mean us inside the barrier call)\n\n", tb->reps);
    if (tb->csv)
        printf("csv,skew,n,d_us,host_inside_us,nic_inside_us\n");
    else
        printf("| N | D (us) | host-based | NIC-based | FoI |\n|---:|---:|---:|---:|---:|\n");
    int sn = tb->max_n < 64 ? tb->max_n : 64;
    for (uint64_t d = 0; d <= 1000000; d = d ? d * 10 : 10000) {
        sim_coll_spec s = spec(tb, sn, SIM_BARRIER);
        s.barrier_alg = QUAY_BARRIER_PAIRWISE;
        s.skew_max = d;
        sim_result h = sim_coll_run(&s);
        s.offload = 1;
        sim_result x = sim_coll_run(&s);
        if (tb->csv)
            printf("csv,skew,%d,%llu,%.2f,%.2f\n", sn, (unsigned long long)(d / 1000),
                   h.inside_us, x.inside_us);
        else
            printf("| %d | %llu | %.2f | %.2f | %.2f |\n", sn, (unsigned long long)(d / 1000),
                   h.inside_us, x.inside_us, h.inside_us / x.inside_us);
        if (d == 0)
            d = 1000; /* then 10 us, 100 us, 1 ms */
    }
}

/* ---- 4. MCS lock ----------------------------------------------------------------- */

static void table_lock(const tables *tb)
{
    printf("\n## 4. MCS lock: us per acquire + release at one rank (1 us critical section, 2 "
           "us between attempts)\n\n");
    if (tb->csv)
        printf("csv,lock,contenders,nic_us,host_us\n");
    else
        printf("| contenders | atomics on the NIC | atomics on a host server | FoI |\n"
               "|---:|---:|---:|---:|\n");
    for (int c = 1; c <= 15; c += c < 4 ? 1 : 4) {
        double nic = sim_lock_run(&tb->model, c, 0, tb->reps);
        double host = sim_lock_run(&tb->model, c, 1, tb->reps);
        if (tb->csv)
            printf("csv,lock,%d,%.2f,%.2f\n", c, nic, host);
        else
            printf("| %d | %.2f | %.2f | %.2f |\n", c, nic, host, host / nic);
    }
}

/* ---- 6. application bypass under skew, 8. ... vs N --------------------------------- */

/* Mean us inside the broadcast call at non-root ranks: plain, bypass. */
static void bypass_pair(const tables *tb, int n, uint64_t d, size_t len, double *plain,
                        double *bypass)
{
    sim_coll_spec s = spec(tb, n, SIM_SKEWED_BCAST);
    s.skew_max = d;
    s.bcast_len = len;
    *plain = sim_coll_run(&s).inside_us;
    s.bypass = 1;
    *bypass = sim_coll_run(&s).inside_us;
}

/* bypass_skew.svg: a finer D sweep than the table, eager sizes only. */
static void bypass_skew_chart(const tables *tb, int n)
{
    enum { STEPS = 11 }; /* D = 0, 100, .., 1000 us */
    static const size_t lens[2] = {8, 2048};
    static const char *const names[4] = {"8 B, plain", "8 B, bypass", "2 KiB, plain",
                                         "2 KiB, bypass"};
    double xs[STEPS], ys[4][STEPS];
    for (int k = 0; k < STEPS; k++) {
        xs[k] = 100.0 * k;
        for (int z = 0; z < 2; z++)
            bypass_pair(tb, n, (uint64_t)k * 100000, lens[z], &ys[2 * z][k], &ys[2 * z + 1][k]);
    }
    svg_series s[4];
    for (int i = 0; i < 4; i++)
        s[i] = (svg_series){names[i], xs, ys[i], STEPS, i / 2, i % 2 == 0};
    char title[96];
    snprintf(title, sizeof title, "Broadcast under skew, N = %d: application bypass", n);
    chart_write(tb, "bypass_skew.svg",
                &(svg_chart){title, "skew D (us; non-roots compute U(0, D) first)",
                             "mean us inside the broadcast call", SVG_LINEAR, SVG_LOG10, s, 4});
}

static void table_bypass(const tables *tb)
{
    printf("\n## 6. Broadcast under skew, application bypass (N = 32, %d rounds; mean us "
           "inside the broadcast call, non-root ranks)\n\n", tb->reps);
    if (tb->csv)
        printf("csv,bypass,len,d_us,plain_us,bypass_us\n");
    else
        printf("| size | D (us) | plain | bypass | FoI |\n|---:|---:|---:|---:|---:|\n");
    int bn = tb->max_n < 32 ? tb->max_n : 32;
    static const size_t blens[] = {8, 2048, 16384, 65536};
    for (size_t z = 0; z < sizeof blens / sizeof blens[0]; z++)
        for (uint64_t d = 0; d <= 1000000; d = d ? d * 20 : 50000) {
            double plain, bypass;
            bypass_pair(tb, bn, d, blens[z], &plain, &bypass);
            if (tb->csv)
                printf("csv,bypass,%zu,%llu,%.2f,%.2f\n", blens[z],
                       (unsigned long long)(d / 1000), plain, bypass);
            else
                printf("| %zu | %llu | %.2f | %.2f | %.2f |\n", blens[z],
                       (unsigned long long)(d / 1000), plain, bypass, plain / bypass);
        }
    if (tb->svg_dir != NULL)
        bypass_skew_chart(tb, bn);
}

static void table_bypass_n(const tables *tb)
{
    enum { D_NS = 1000000, LEN = 8, N_MAX = 128 };
    double xs[MAX_POINTS], plain[MAX_POINTS], bypass[MAX_POINTS];
    size_t np = 0;
    printf("\n## 8. Broadcast under skew vs N, application bypass (%d B, D = %d us, %d rounds; "
           "mean us inside the broadcast call, non-root ranks)\n\n", LEN, D_NS / 1000,
           tb->reps);
    if (tb->csv)
        printf("csv,bypass_n,n,d_us,plain_us,bypass_us\n");
    else
        printf("| N | plain | bypass | FoI |\n|---:|---:|---:|---:|\n");
    for (int n = 2; n <= tb->max_n && n <= N_MAX; n *= 2, np++) {
        xs[np] = n;
        bypass_pair(tb, n, D_NS, LEN, &plain[np], &bypass[np]);
        if (tb->csv)
            printf("csv,bypass_n,%d,%d,%.2f,%.2f\n", n, D_NS / 1000, plain[np], bypass[np]);
        else
            printf("| %d | %.2f | %.2f | %.2f |\n", n, plain[np], bypass[np],
                   plain[np] / bypass[np]);
    }
    if (tb->svg_dir == NULL)
        return;
    svg_series s[2] = {{"plain", xs, plain, np, 0, 1}, {"bypass", xs, bypass, np, 1, 0}};
    chart_write(tb, "bypass_n.svg",
                &(svg_chart){"8 B broadcast under 1 ms skew: application bypass vs N",
                             "ranks (N)", "mean us inside the broadcast call", SVG_LOG2,
                             SVG_LOG10, s, 2});
}

/* ---- 10. application-bypass reduce under skew ------------------------------------ */

static void table_bypass_reduce(const tables *tb)
{
    printf("\n## 10. Reduce under skew, application bypass (N = 32, %d rounds; int64 sum to "
           "rank 0, which calls at once; mean us inside the reduce call, non-root ranks)\n\n",
           tb->reps);
    if (tb->csv)
        printf("csv,bypass_reduce,len,d_us,plain_us,bypass_us\n");
    else
        printf("| size | D (us) | plain | bypass | FoI |\n|---:|---:|---:|---:|---:|\n");
    int bn = tb->max_n < 32 ? tb->max_n : 32;
    static const size_t lens[] = {8, 2048, 16384, 65536};
    for (size_t z = 0; z < sizeof lens / sizeof lens[0]; z++)
        for (uint64_t d = 0; d <= 1000000; d = d ? d * 20 : 50000) {
            sim_coll_spec s = spec(tb, bn, SIM_SKEWED_REDUCE);
            s.skew_max = d;
            s.bcast_len = lens[z];
            double plain = sim_coll_run(&s).inside_us;
            s.bypass = 1;
            double bypass = sim_coll_run(&s).inside_us;
            if (tb->csv)
                printf("csv,bypass_reduce,%zu,%llu,%.2f,%.2f\n", lens[z],
                       (unsigned long long)(d / 1000), plain, bypass);
            else
                printf("| %zu | %llu | %.2f | %.2f | %.2f |\n", lens[z],
                       (unsigned long long)(d / 1000), plain, bypass, plain / bypass);
        }
}

/* ---- 7. multi-send --------------------------------------------------------------- */

static void table_multi(const tables *tb)
{
    printf("\n## 7. Multi-send: 4 KiB broadcast, mean us inside the call (non-root ranks, "
           "%d rounds, no skew)\n\n", tb->reps);
    if (tb->csv)
        printf("csv,multi,n,alg,unicast_us,multi_us\n");
    else
        printf("| N | tree | unicast copies | multi-send | FoI |\n|---:|---|---:|---:|---:|\n");
    for (int n = 4; n <= tb->max_n && n <= 256; n *= 4)
        for (uint32_t alg = QUAY_BCAST_BINOMIAL; alg <= QUAY_BCAST_OPTIMAL_TREE; alg++) {
            sim_coll_spec s = spec(tb, n, SIM_SKEWED_BCAST);
            s.bcast_len = 4096;
            s.bcast_alg = alg;
            sim_result u = sim_coll_run(&s);
            s.multi_send = 1;
            sim_result x = sim_coll_run(&s);
            if (tb->csv)
                printf("csv,multi,%d,%u,%.2f,%.2f\n", n, alg, u.inside_us, x.inside_us);
            else
                printf("| %d | %s | %.2f | %.2f | %.2f |\n", n,
                       alg == QUAY_BCAST_BINOMIAL ? "binomial" : "postal optimal", u.inside_us,
                       x.inside_us, u.inside_us / x.inside_us);
        }
}

/* ---- 9. single remote atomics ------------------------------------------------------ */

static void table_atomic(const tables *tb)
{
    static const struct {
        uint32_t op;
        const char *name;
    } ops[] = {{QUAY_ATOMIC_FADD, "fetch-and-add"},
               {QUAY_ATOMIC_CAS, "compare-and-swap"},
               {QUAY_ATOMIC_SWAP, "swap"}};
    printf("\n## 9. Remote atomic latency, uncontended (rank 1 on a word of rank 0, one at a "
           "time, %d ops; us from issue to completion)\n\n", tb->reps);
    if (tb->csv)
        printf("csv,atomic,op,nic_us,host_us,foi\n");
    else
        printf("| operation | on the NIC | on a host server thread | FoI |\n"
               "|---|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        double nic = sim_atomic_run(&tb->model, ops[i].op, 0, tb->reps);
        double host = sim_atomic_run(&tb->model, ops[i].op, 1, tb->reps);
        printf(tb->csv ? "csv,atomic,%s,%.2f,%.2f,%.2f\n" : "| %s | %.2f | %.2f | %.2f |\n",
               ops[i].name, nic, host, host / nic);
    }
}

/* ---- 5. the simulator itself ------------------------------------------------------ */

static void sim_row(const char *what, sim_result r)
{
    printf("| %s | %llu | %llu | %.3f | %.0f | %.0f |\n", what,
           (unsigned long long)r.st.events, (unsigned long long)r.st.packets, r.wall_s,
           (double)r.st.packets / r.wall_s, (double)r.st.events / r.wall_s);
}

static void table_sim(const tables *tb)
{
    char what[96];
    int big = tb->max_n;
    printf("\n## 5. The simulator (wall clock of this machine)\n\n");
    printf("| run | events | deliveries | wall s | deliveries/s | events/s |\n"
           "|---|---:|---:|---:|---:|---:|\n");
    sim_coll_spec s = spec(tb, big, SIM_BARRIER);
    s.reps = 1;
    snprintf(what, sizeof what, "one %d-rank barrier, host-based", big);
    sim_row(what, sim_coll_run(&s));
    s.reps = tb->reps;
    snprintf(what, sizeof what, "%d %d-rank barriers, host-based", tb->reps, big);
    sim_row(what, sim_coll_run(&s));
    s.offload = 1;
    snprintf(what, sizeof what, "%d %d-rank barriers, offloaded", tb->reps, big);
    sim_row(what, sim_coll_run(&s));
}

/* ---- options ------------------------------------------------------------------------ */

/* In print order: the simulator's wall-clock table comes last. */
static const struct table_def {
    const char *name;
    void (*run)(const tables *tb);
} table_defs[] = {
    {"barrier", table_barrier}, {"allreduce", table_allreduce}, {"skew", table_skew},
    {"lock", table_lock},       {"bypass", table_bypass},       {"multi", table_multi},
    {"bypass-n", table_bypass_n}, {"atomic", table_atomic},
    {"bypass-reduce", table_bypass_reduce}, {"sim", table_sim},
};
enum { NTABLES = sizeof table_defs / sizeof table_defs[0] };

static int usage(FILE *out)
{
    fprintf(out,
            "usage: quay-sim tables [--model FILE] [--set key=value]... [--max-n N] "
            "[--reps R] [--csv] [--only NAME]... [--only-sim] [--svg DIR]\n"
            "  (bench/bench_timed takes the same options)\n  NAME:");
    for (size_t i = 0; i < NTABLES; i++)
        fprintf(out, " %s", table_defs[i].name);
    fprintf(out, "\n  model keys: ");
    sim_model_list_keys(out);
    fprintf(out, "\n");
    return out == stdout ? 0 : 2;
}

/* A decimal int in [lo, hi]. */
static int int_arg(const char *v, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || x < lo || x > hi)
        return -1;
    *out = (int)x;
    return 0;
}

static int table_index(const char *name)
{
    for (int i = 0; i < NTABLES; i++)
        if (strcmp(table_defs[i].name, name) == 0)
            return i;
    return -1;
}

int sim_tables_main(int argc, char **argv)
{
    tables tb;
    memset(&tb, 0, sizeof tb);
    tb.max_n = 1024;
    tb.reps = 20;
    const char *model = NULL;
    int nsets = 0, only = 0, selected[NTABLES] = {0};
    const char **sets = sim_calloc((size_t)argc, sizeof *sets);
    char err[512];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int k;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            free(sets);
            return usage(stdout);
        } else if (strcmp(a, "--csv") == 0) {
            tb.csv = 1;
        } else if (strcmp(a, "--only-sim") == 0) {
            selected[table_index("sim")] = only = 1;
        } else if (v == NULL) {
            fprintf(stderr, "quay-sim tables: %s: unknown option or missing value\n", a);
            free(sets);
            return usage(stderr);
        } else if (strcmp(a, "--model") == 0) {
            model = argv[++i];
        } else if (strcmp(a, "--set") == 0) {
            sets[nsets++] = argv[++i];
        } else if (strcmp(a, "--svg") == 0) {
            tb.svg_dir = argv[++i];
        } else if (strcmp(a, "--max-n") == 0 && int_arg(v, 2, MAX_N_LIMIT, &tb.max_n) == 0) {
            i++;
        } else if (strcmp(a, "--reps") == 0 && int_arg(v, 1, 1000000, &tb.reps) == 0) {
            i++;
        } else if (strcmp(a, "--only") == 0 && (k = table_index(v)) >= 0) {
            selected[k] = only = 1;
            i++;
        } else {
            fprintf(stderr, "quay-sim tables: %s %s: unknown option or bad value\n", a, v);
            free(sets);
            return usage(stderr);
        }
    }

    nicsim_model_default(&tb.model);
    if (model != NULL && nicsim_model_load(model, &tb.model, err, sizeof err) != 0) {
        fprintf(stderr, "quay-sim tables: %s\n", err);
        free(sets);
        return 2;
    }
    for (int s = 0; s < nsets; s++) {
        int rc = sim_model_set(&tb.model, sets[s], err, sizeof err);
        if (rc != 0) {
            fprintf(stderr, "quay-sim tables: %s\n", err);
            if (rc == -2) {
                fprintf(stderr, "  model keys: ");
                sim_model_list_keys(stderr);
                fprintf(stderr, "\n");
            }
            free(sets);
            return 2;
        }
    }
    free(sets);
    if (tb.svg_dir != NULL && mkdir(tb.svg_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "quay-sim tables: %s: %s\n", tb.svg_dir, strerror(errno));
        return 2;
    }

    sim_model_print(stdout, &tb.model);
    for (int i = 0; i < NTABLES; i++)
        if (!only || selected[i])
            table_defs[i].run(&tb);
    return 0;
}
