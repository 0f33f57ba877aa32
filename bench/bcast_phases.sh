#!/usr/bin/env bash
# bench/bcast_phases.sh — osu_bcast's loop taken apart (bench/mpi/
# bcast_phases.c), quay against MPICH in alternating rounds, the root
# first at rank 0 (OSU's) and then at the last rank.
#
#   bench/bcast_phases.sh [--rounds K] [--np N] [--sizes "8 64 1024"] [--iters I]
#
# osu_bcast times MPI_Bcast right after an MPI_Barrier, so what it
# reports depends on which rank that barrier lets go first: a receiver
# let go before the root waits for the root's head start inside
# MPI_Bcast. The table gives, per size and root, the medians over rounds
# of each column (ns; see bcast_phases.c) and the median of the paired
# quay / MPICH ratios of osu (what OSU reports), of delivery (root in
# to last receiver out: the broadcast itself) and of period (one round of
# the loop: what a program looping both waits).
#
# Environment: BUILD (default build-bench) must have tools/quayrun and
# bench/mpi/bcast_phases_quay (-DQUAY_BENCH=ON); MPICH's mpicc builds
# $BUILD/bench/mpi/bcast_phases_mpich (kept and used where there is no
# mpicc). Rows go to
# $BUILD/bench/mpi/bcast_phases.csv (round,impl,np,size,root,iters,osu,
# root_ns,recv,delivery,lead,period).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=5
NP=2
SIZES="8 64 1024"
ITERS=20000
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bcast_phases.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done

BUILD=$(cd "${BUILD:-$ROOT/build-bench}" && pwd)
QR=$BUILD/tools/quayrun
QB=$BUILD/bench/mpi/bcast_phases_quay
MB=$BUILD/bench/mpi/bcast_phases_mpich
for f in "$QR" "$QB"; do
    [ -x "$f" ] || { echo "bcast_phases.sh: $f missing (build $BUILD with -DQUAY_BENCH=ON)" >&2; exit 1; }
done
command -v mpiexec >/dev/null ||
    { echo "bcast_phases.sh: mpiexec not found (Debian: mpich libmpich-dev)" >&2; exit 1; }
# (Without mpicc, a program built before is used: on a machine with
# MPICH's libraries and mpiexec carried along, but no compiler.)
if command -v mpicc >/dev/null; then
    mpicc -O2 -Wall -Wextra -o "$MB" "$ROOT/bench/mpi/bcast_phases.c"
elif [ ! -x "$MB" ]; then
    echo "bcast_phases.sh: no mpicc to build $MB (Debian: libmpich-dev)" >&2
    exit 1
fi

CSV=$BUILD/bench/mpi/bcast_phases.csv
: >"$CSV"
for r in $(seq 1 "$ROUNDS"); do
    for s in $SIZES; do
        for root in 0 $((NP - 1)); do
            m=$(mpiexec -launcher fork -bind-to none -n "$NP" "$MB" -i "$ITERS" -s "$s" -r "$root")
            q=$("$QR" -n "$NP" "$QB" -i "$ITERS" -s "$s" -r "$root")
            echo "$r,mpich,$m" >>"$CSV"
            echo "$r,quay,$q" >>"$CSV"
        done
    done
    echo "round $r of $ROUNDS done" >&2
done

echo "bcast_phases: $NP ranks, $ROUNDS rounds, $ITERS iterations; medians in ns" \
     "(lead > 0: a receiver left the barrier before the root)"
printf "%6s %4s | %-35s | %-35s | %7s %9s %10s\n" size root \
    "MPICH: osu root recv deliv lead per" "quay: osu root recv deliv lead per" \
    "osu q/M" "deliv q/M" "period q/M"
awk -F, '
function med(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    k = $4 SUBSEP $5; keys[k] = 1
    for (c = 7; c <= 12; c++) v[$2, k, c] = v[$2, k, c] " " $c
    x[$1, $2, k, 7] = $7; x[$1, $2, k, 10] = $10; x[$1, $2, k, 12] = $12; rounds[$1] = 1
}
END {
    for (k in keys) {
        split(k, p, SUBSEP)
        ro = ""; rd = ""; rp = ""
        for (r in rounds) {
            if ((r, "mpich", k, 7) in x && x[r, "mpich", k, 7] > 0) {
                ro = ro " " x[r, "quay", k, 7] / x[r, "mpich", k, 7]
                rd = rd " " x[r, "quay", k, 10] / x[r, "mpich", k, 10]
                if (x[r, "mpich", k, 12] > 0)
                    rp = rp " " x[r, "quay", k, 12] / x[r, "mpich", k, 12]
            }
        }
        printf "%6s %4s |", p[1], p[2]
        for (m = 0; m < 2; m++) {
            impl = m ? "quay" : "mpich"
            for (c = 7; c <= 12; c++) printf " %5.0f", med(v[impl, k, c])
            printf " |"
        }
        printf " %7.2f %9.2f %10.2f\n", med(ro), med(rd), med(rp)
    }
}' "$CSV" | sort -n -k1,1 -k2,2
