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
# (latency at 0 bytes is only a warm-up here)
"$ROOT/bench/mode_report.sh" --skip 'latency 0' "$CSV"
echo "raw values: $CSV"
