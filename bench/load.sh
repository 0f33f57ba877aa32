#!/usr/bin/env bash
# bench/load.sh — MPICH's sendflood and ctxalloc on quay and on MPICH,
# on a quiet machine and beside CPU-bound processes, in alternating rounds.
#
#   bench/load.sh [options] MPICH_SOURCE_DIR
#
# MPICH_SOURCE_DIR is an MPICH source tree you fetched (or its test/mpi
# folder); nothing is downloaded. The tests are built unmodified with
# quaycc and with MPICH's mpicc, both against quay's stand-in for MPICH's
# harness (tests/mpich/mtest.c, tests/mpich/include).
#
#   --rounds K       rounds (5); each runs every test quiet, then loaded,
#                    and within each MPICH and quay in turn (the order
#                    flips every round)
#   --hogs N         CPU-bound processes beside the loaded runs (2:
#                    sh -c 'while :; do :; done')
#   --np N           ranks (2)
#   --tests "A B"    MPICH test paths (default "pt2pt/sendflood comm/ctxalloc")
#   --only quiet|loaded
#   --limit S        a run's time limit, seconds (120; a run cut off
#                    counts as S)
#   --base DIR       also run the quay binaries on the libquaympi of
#                    another quay build (DIR/mpi), e.g. main's, as "base"
#   --transport T    quayrun's --transport (shm)
#
# Environment: BUILD (default: build) has mpi/quaycc and tools/quayrun.
# Each value is the wall time of the whole run (launcher included), with
# the runnable-thread count of /proc/loadavg just before. Raw values go to
# $BUILD/load/load.csv (round,cond,impl,test,seconds,runnable); the report
# gives, per test and condition, each implementation's median and the
# median over rounds of quay's time over MPICH's in the same round.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=5
HOGS=2
NP=2
TESTS="pt2pt/sendflood comm/ctxalloc"
ONLY=""
LIMIT=120
BASE=""
TRANSPORT=shm
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --hogs) HOGS=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --limit) LIMIT=$2; shift 2 ;;
    --base) BASE=$(cd "$2" && pwd); shift 2 ;;
    --transport) TRANSPORT=$2; shift 2 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    -*) echo "load.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -eq 1 ] || { echo "usage: bench/load.sh [options] MPICH_SOURCE_DIR (--help)" >&2; exit 2; }
if [ -d "$1/test/mpi/pt2pt" ]; then SRC=$1/test/mpi; else SRC=$1; fi
[ -d "$SRC/pt2pt" ] || { echo "load.sh: $1 is not an MPICH source tree" >&2; exit 2; }
SRC=$(cd "$SRC" && pwd)
BUILD=$(cd "${BUILD:-$ROOT/build}" && pwd)
QCC=$BUILD/mpi/quaycc
QR=$BUILD/tools/quayrun
for f in "$QCC" "$QR"; do
    [ -x "$f" ] || { echo "load.sh: $f missing (build quay first)" >&2; exit 2; }
done
if ! command -v mpicc >/dev/null || ! command -v mpiexec >/dev/null; then
    echo "load.sh: mpicc / mpiexec not found (Debian: mpich libmpich-dev)" >&2
    exit 2
fi
[ -z "$BASE" ] || [ -f "$BASE/mpi/libquaympi.so" ] ||
    { echo "load.sh: no $BASE/mpi/libquaympi.so" >&2; exit 2; }

OUT=$BUILD/load
mkdir -p "$OUT"
H=$ROOT/tests/mpich
# Build each test with each compiler (the harness stand-in builds under both).
for impl in quay mpich; do
    cc=$QCC
    [ $impl = mpich ] && cc=mpicc
    "$cc" -O2 -I"$H/include" -c "$H/mtest.c" -o "$OUT/mtest.$impl.o"
    for t in $TESTS; do
        "$cc" -O2 -I"$H/include" -o "$OUT/$(basename "$t").$impl" "$SRC/$t.c" \
            "$OUT/mtest.$impl.o" -lm
    done
done

IMPLS=(mpich quay)
[ -z "$BASE" ] || IMPLS+=(base)
HOG_PIDS=()
hogs_off() {
    [ ${#HOG_PIDS[@]} -eq 0 ] && return 0
    kill "${HOG_PIDS[@]}" 2>/dev/null || true
    wait "${HOG_PIDS[@]}" 2>/dev/null || true
    HOG_PIDS=()
}
trap hogs_off EXIT
hogs_on() {
    for _ in $(seq 1 "$HOGS"); do
        sh -c 'while :; do :; done' &
        HOG_PIDS+=($!)
    done
    sleep 0.2
}

runnable() { cut -d' ' -f4 /proc/loadavg | cut -d/ -f1; }

run_one() { # impl test -> seconds on stdout
    local bin=$OUT/$2.$1 t0 t1 rc=0
    [ "$1" = base ] && bin=$OUT/$2.quay
    t0=$(date +%s.%N)
    case $1 in
    mpich) timeout "$LIMIT" mpiexec -launcher fork -bind-to none -n "$NP" "$bin" ;;
    quay) timeout "$LIMIT" "$QR" -n "$NP" --transport "$TRANSPORT" "$bin" ;;
    base) LD_LIBRARY_PATH=$BASE/mpi timeout "$LIMIT" "$QR" -n "$NP" --transport "$TRANSPORT" "$bin" ;;
    esac >"$OUT/$1.$2.out" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    if [ $rc -eq 124 ]; then
        echo "$LIMIT"
    elif [ $rc -ne 0 ] || ! grep -q ' No Errors' "$OUT/$1.$2.out"; then
        echo "load.sh: $1 $2 failed (status $rc); see $OUT/$1.$2.out" >&2
        echo nan
    else
        awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
    fi
}

CONDS=(quiet loaded)
[ -z "$ONLY" ] || CONDS=("$ONLY")
CSV=$OUT/load.csv
echo "round,cond,impl,test,seconds,runnable" >"$CSV"
for r in $(seq 1 "$ROUNDS"); do
    order=("${IMPLS[@]}")
    if [ $((r % 2)) -eq 0 ]; then # flip: MPICH last
        order=("${IMPLS[@]:1}" "${IMPLS[0]}")
    fi
    for cond in "${CONDS[@]}"; do
        [ "$cond" = loaded ] && hogs_on
        for t in $TESTS; do
            t=$(basename "$t")
            for impl in "${order[@]}"; do
                n=$(runnable)
                s=$(run_one "$impl" "$t")
                echo "$r,$cond,$impl,$t,$s,$n" >>"$CSV"
            done
        done
        hogs_off
    done
    printf '.' >&2
done
echo >&2

echo "## load.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $NP ranks, $ROUNDS rounds," \
    "$HOGS hogs when loaded, quay over $TRANSPORT"
# Per test and condition: each implementation's median seconds, and the
# median over rounds of its time over MPICH's in the same round; then
# every run as seconds@runnable, round by round.
awk -F, -v impls="${IMPLS[*]}" '
    function median(s,   a, n, i, j, t) {
        n = split(s, a, " ")
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        if (n == 0) return "nan"
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    NR > 1 {
        k = $4 " " $2
        if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
        if ($5 != "nan") v[k, $3] = v[k, $3] " " $5
        t[$1, k, $3] = $5; run[$1, k, $3] = $6
        if ($1 > nr) nr = $1
    }
    END {
        ni = split(impls, im, " ")
        printf "%-18s", "test cond"
        for (i = 1; i <= ni; i++) printf " %9s", im[i]
        for (i = 2; i <= ni; i++) printf " %12s", im[i] "/" im[1]
        printf "\n"
        for (n = 1; n <= nk; n++) {
            k = order[n]
            printf "%-18s", k
            for (i = 1; i <= ni; i++) printf " %9.3f", median(v[k, im[i]])
            for (i = 2; i <= ni; i++) {
                s = ""
                for (r = 1; r <= nr; r++)
                    if (t[r, k, im[i]] + 0 > 0 && t[r, k, im[1]] + 0 > 0)
                        s = s " " t[r, k, im[i]] / t[r, k, im[1]]
                printf " %12.2f", median(s)
            }
            printf "\n"
        }
        printf "\nevery run, seconds@runnable threads just before it:\n"
        for (n = 1; n <= nk; n++)
            for (i = 1; i <= ni; i++) {
                printf "%-18s %-6s", order[n], im[i]
                for (r = 1; r <= nr; r++) printf " %s@%s", t[r, order[n], im[i]], run[r, order[n], im[i]]
                printf "\n"
            }
    }' "$CSV"
echo "raw values: $CSV"
