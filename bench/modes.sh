#!/usr/bin/env bash
# bench/modes.sh — small-message latency, barrier and allreduce against
# MPICH on a machine whose speed changes under the benchmark.
#
#   bench/modes.sh [--rounds K] [BUILD_DIR]
#
# On a small virtual machine the two vCPUs sit on shared or on separate
# caches as the hypervisor moves them, for minutes at a time: a cache
# line crosses between the ranks in tens or in hundreds of nanoseconds,
# and every small-message figure, MPICH's and quay's alike, jumps by 2-4x
# between the two "modes" (bench/RESULTS.md 8f). One run of compare.sh
# can catch MPICH in one mode and quay in the other. This script runs
# short measurements of both in turn, K rounds (default 16), each round
# MPICH then quay (qbench --csv --reps 3 --rep-ms 50, sizes 8 and 0),
# and sorts every value into its mode: per implementation and benchmark,
# the sorted values are split at their largest jump when it is at least
# 1.35x (else they are one mode). Then, per benchmark and mode, the median
# of each implementation and the ratio quay / MPICH, and how many values
# each had in that mode ("mixed" when one of them showed no split: all
# values against all). Then the rounds paired: quay's value over MPICH's
# of the same round, median and quartiles over the rounds (the two runs
# of a round are seconds apart, so mostly in the same mode; the median
# shrugs off the rounds that straddle a change).
#
# BUILD_DIR (default build-bench) must have qbench_quay and quayrun
# (bench/compare.sh builds them) and, for MPICH, bench/mpi/qbench_mpich
# (compare.sh builds it with mpicc). Raw values go to
# BUILD_DIR/bench/mpi/compare/modes.csv (round,impl,bench,size,value).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=16
BUILD=""
while [ $# -gt 0 ]; do
    case $1 in
    --rounds)
        ROUNDS=$2
        shift 2
        ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        BUILD=$1
        shift
        ;;
    esac
done
BUILD=${BUILD:-$ROOT/build-bench}
QB=$BUILD/bench/mpi/qbench_quay
QM=$BUILD/bench/mpi/qbench_mpich
QR=$BUILD/tools/quayrun
for f in "$QB" "$QR" "$QM"; do
    [ -x "$f" ] || { echo "modes.sh: $f missing (run bench/compare.sh first)" >&2; exit 1; }
done
command -v mpiexec >/dev/null || { echo "modes.sh: mpiexec not found (Debian: mpich)" >&2; exit 1; }

OUTDIR=$BUILD/bench/mpi/compare
mkdir -p "$OUTDIR"
CSV=$OUTDIR/modes.csv
ARGS=(--csv --reps 3 --rep-ms 50 --size 8 --size 0 latency barrier allreduce)
echo "round,impl,bench,size,value" >"$CSV"
for i in $(seq 1 "$ROUNDS"); do
    mpiexec -launcher fork -bind-to none -n 2 "$QM" "${ARGS[@]}" 2>/dev/null |
        awk -F, -v r="$i" '$1 ~ /^(latency|barrier|allreduce)$/ {print r ",mpich," $1 "," $2 "," $3}' >>"$CSV"
    "$QR" -n 2 "$QB" "${ARGS[@]}" 2>/dev/null |
        awk -F, -v r="$i" '$1 ~ /^(latency|barrier|allreduce)$/ {print r ",quay," $1 "," $2 "," $3}' >>"$CSV"
    printf '.' >&2
done
echo >&2

echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $ROUNDS rounds; us, median per mode (values in it)"
printf "%-14s %-5s %13s %13s %8s\n" bench mode MPICH quay q/MPICH
awk -F, 'NR > 1 && !($3 == "latency" && $4 == 0) { k = $3 " " $4; v[k "," $2] = v[k "," $2] " " $5; keys[k] = 1 }
# Sort s; lo gets the values up to the largest jump (>= 1.35x), hi the
# rest (empty when there is no such jump). Returns 1 when split.
function split_modes(s, lo, hi,    a, n, i, j, t, best, cut) {
    delete lo; delete hi
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    best = 1.35; cut = n
    for (i = 1; i < n; i++) if (a[i] > 0 && a[i + 1] / a[i] >= best) { best = a[i + 1] / a[i]; cut = i }
    lo[0] = 0; hi[0] = 0
    for (i = 1; i <= n; i++) if (i <= cut) lo[++lo[0]] = a[i]; else hi[++hi[0]] = a[i]
    return cut < n
}
function all_vals(s, x,    a, n, i, j, t) {
    delete x
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    x[0] = n
    for (i = 1; i <= n; i++) x[i] = a[i]
}
function med(x,    n) { n = x[0]; if (n == 0) return -1; return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
function row(k, mode, m, q,    a, b) {
    a = med(m); b = med(q)
    printf "%-14s %-5s %8.3f (%2d) %8.3f (%2d) %8s\n", k, mode, a, m[0], b, q[0], (a > 0 && b > 0) ? sprintf("%.2f", b / a) : "-"
}
END {
    for (k in keys) {
        sm = split_modes(v[k ",mpich"], ml, mh); sq = split_modes(v[k ",quay"], ql, qh)
        if (sm && sq) {
            row(k, "fast", ml, ql); row(k, "slow", mh, qh)
        } else {
            # One of them stayed in one mode: no pairing by mode, only
            # all values against all.
            all_vals(v[k ",mpich"], ml); all_vals(v[k ",quay"], ql)
            row(k, "mixed", ml, ql)
        }
    }
}' "$CSV" | sort
# The same rounds paired: quay's value over MPICH's of the same round
# (a second apart, so mostly the same mode), median and quartiles.
echo "## paired by round: quay / MPICH"
awk -F, 'NR > 1 && !($3 == "latency" && $4 == 0) { k = $3 " " $4; val[$1 "," k "," $2] = $5; keys[k] = 1; R[$1] = 1 }
END {
    for (k in keys) {
        n = 0
        for (r in R) {
            a = val[r "," k ",mpich"]; b = val[r "," k ",quay"]
            if (a > 0 && b > 0) x[++n] = b / a
        }
        for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
        if (n > 0)
            printf "%-14s median %.2f  quartiles %.2f-%.2f  (%d rounds)\n", k,
                   n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2, x[int(n / 4) + 1], x[int(3 * n / 4)], n
        delete x
    }
}' "$CSV" | sort
echo "raw values: $CSV"
