#!/usr/bin/env bash
# bench/osu.sh — the OSU Micro-Benchmarks, built unmodified with quaycc
# and with MPICH's mpicc, run in alternating rounds, reported per size as
# paired ratios and per speed mode (bench/mode_report.sh).
#
#   bench/osu.sh [options] OSU_SOURCE_DIR [BENCH...]
#
# OSU_SOURCE_DIR is an OSU Micro-Benchmarks source tree you fetched
# (5.x; it is never part of quay). BENCH are program names, default
# osu_latency osu_bw osu_mbw_mr osu_bcast osu_barrier osu_allreduce;
# osu_ibcast, osu_iallreduce, osu_ibarrier (overlap %) and the rest of
# mpi/pt2pt and mpi/collective work too.
#
#   --rounds K        rounds, each MPICH then quay for every BENCH (6)
#   --np N            ranks (2; osu_latency and osu_bw take 2 only)
#   --transport T     quayrun's --transport (shm, tcp or an adapter's path);
#                     MPICH runs with its own default (shared memory)
#   --max SIZE        collectives: largest message (OSU's -m), e.g. 1024
#   --osu-args "..."  more arguments for every benchmark (e.g. "-i 2000")
#   --quay-only       run quay alone (no ratios)
#   --vs-env "V=X .." quay against itself instead of MPICH: rounds of quay
#                     as it is ("off") and of quay with these environment
#                     variables set ("on"); the ratios are on / off (e.g.
#                     --vs-env QUAY_ASYNC_PROGRESS=1: what the thread costs)
#
# Environment: BUILD (default build-bench) must have mpi/quaycc and
# tools/quayrun (configured with -DQUAY_MPI=ON, the default); OSU is built
# in $BUILD/osu/quay and $BUILD/osu/mpich once (delete them to rebuild).
# Trees built once run anywhere they are copied with quay's and MPICH's
# libraries (LD_LIBRARY_PATH) and mpiexec: neither mpicc nor the OSU
# source is needed there (OSU_SOURCE_DIR is then only a name).
#
# What is recorded, per benchmark and size (CSV round,impl,bench,size,value
# in $BUILD/osu/osu.csv):
#   latency, bcast, barrier, allreduce, reduce ...  µs (column 2; lower is better)
#   bw, bibw                                         MB/s (column 2; higher)
#   mbw_mr                                           messages/s (column 3; higher)
#   i* (non-blocking collectives)                    overlap % (last column)
# The report's ratio is quay / MPICH of that unit: below 1 is quay ahead
# for a time, above 1 for a rate or an overlap.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=6
NP=2
TRANSPORT=""
MAX=""
OSU_ARGS=""
QUAY_ONLY=0
VS_ENV=""
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --transport) TRANSPORT=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    --osu-args) OSU_ARGS=$2; shift 2 ;;
    --quay-only) QUAY_ONLY=1; shift ;;
    --vs-env) VS_ENV=$2; shift 2 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    -*) echo "osu.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) break ;;
    esac
done
SRC=${1:?usage: bench/osu.sh [options] OSU_SOURCE_DIR [BENCH...] (--help)}
shift
SRC=$(cd "$SRC" 2>/dev/null && pwd || echo "$SRC")
BENCHES=("$@")
[ ${#BENCHES[@]} -gt 0 ] ||
    BENCHES=(osu_latency osu_bw osu_mbw_mr osu_bcast osu_barrier osu_allreduce)

BUILD=${BUILD:-$ROOT/build-bench}
BUILD=$(cd "$BUILD" && pwd)
QCC=$BUILD/mpi/quaycc
QR=$BUILD/tools/quayrun
OUT=$BUILD/osu
# An OSU tree already built ($OUT/quay, $OUT/mpich, each with .built) is
# run as it is: copied with quay's library, MPICH's and mpiexec to a
# machine without compilers or the OSU source, it needs neither.
built() { [ -f "$OUT/$1/.built" ]; }
[ -x "$QR" ] || { echo "osu.sh: $QR missing (build quay in $BUILD first)" >&2; exit 1; }
built quay || [ -x "$QCC" ] || { echo "osu.sh: $QCC missing (build quay in $BUILD first)" >&2; exit 1; }
IMPLS=(quay)
if [ -n "$VS_ENV" ]; then
    for v in $VS_ENV; do
        [[ $v == [A-Za-z_]*=* ]] || { echo "osu.sh: --vs-env wants VAR=VALUE words, not $v" >&2; exit 2; }
    done
    QUAY_ONLY=1 # (MPICH is not run; the pair is quay off / on)
    IMPLS=(off on)
elif [ "$QUAY_ONLY" = 0 ]; then
    command -v mpiexec >/dev/null && { built mpich || command -v mpicc >/dev/null; } ||
        { echo "osu.sh: mpicc / mpiexec not found (Debian: mpich libmpich-dev), or --quay-only" >&2; exit 1; }
    IMPLS=(mpich quay)
fi
if ! built quay || { [ "$QUAY_ONLY" = 0 ] && ! built mpich; }; then
    [ -x "$SRC/configure" ] || { echo "osu.sh: $SRC has no configure (an OSU source tree?)" >&2; exit 1; }
fi
mkdir -p "$OUT"

# Build OSU with each compiler, out of tree, only the MPI benchmarks.
build_osu() { # impl cc
    local dir=$OUT/$1
    [ -f "$dir/.built" ] && return 0
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "osu.sh: building OSU with $2 in $dir" >&2
    (cd "$dir" && "$SRC/configure" CC="$2" CXX="$2" >configure.log 2>&1) ||
        { echo "osu.sh: configure with $2 failed; see $dir/configure.log" >&2; exit 1; }
    # -k: a benchmark of a call the library lacks fails alone (run_one
    # says so when it is asked for).
    make -k -j"$(nproc)" -C "$dir/mpi" >"$dir/make.log" 2>&1 || true
    touch "$dir/.built"
}
build_osu quay "$QCC"
[ "$QUAY_ONLY" = 1 ] || built mpich || build_osu mpich "$(command -v mpicc)"

# The program of a benchmark in an OSU build.
prog() { # impl bench
    local p tree=$1
    [ "$tree" = mpich ] || tree=quay
    for p in "$OUT/$tree/mpi/pt2pt/$2" "$OUT/$tree/mpi/collective/$2" "$OUT/$tree/mpi/one-sided/$2"; do
        [ -x "$p" ] && { echo "$p"; return 0; }
    done
    echo "osu.sh: no $2 in $OUT/$tree (it did not build: $OUT/$tree/make.log)" >&2
    return 1
}

# Which column a benchmark's figure is in: rate (3), overlap (last), else 2.
column() {
    case ${1#osu_} in
    mbw_mr) echo rate ;;
    i*) echo overlap ;;
    *) echo plain ;;
    esac
}

run_one() { # impl bench
    local p args=()
    p=$(prog "$1" "$2") || return 1
    [ -n "$MAX" ] && [[ $p == */collective/* ]] && args+=(-m "$MAX")
    # shellcheck disable=SC2206 # (word splitting of --osu-args is wanted)
    [ -n "$OSU_ARGS" ] && args+=($OSU_ARGS)
    local env=()
    # shellcheck disable=SC2206 # (VAR=VALUE words)
    [ "$1" = on ] && env=($VS_ENV)
    if [ "$1" = mpich ]; then
        mpiexec -launcher fork -bind-to none -n "$NP" "$p" "${args[@]}"
    elif [ -n "$TRANSPORT" ]; then
        env "${env[@]}" "$QR" -n "$NP" --transport "$TRANSPORT" "$p" "${args[@]}"
    else
        env "${env[@]}" "$QR" -n "$NP" "$p" "${args[@]}"
    fi
}

# OSU's table to CSV rows: data lines start with a number; a line of one
# number (barrier) or without a size column (ibarrier) is size 0.
to_csv() { # round impl bench
    awk -v r="$1" -v impl="$2" -v b="$3" -v col="$(column "$3")" '
        $1 ~ /^[0-9.]+$/ {
            if (col == "overlap") { size = (NF >= 5) ? $1 : 0; v = $NF }
            else if (NF == 1) { size = 0; v = $1 }
            else if (col == "rate") { size = $1; v = $3 }
            else { size = $1; v = $2 }
            printf "%s,%s,%s,%s,%s\n", r, impl, b, size, v
        }'
}

CSV=$OUT/osu.csv
echo "round,impl,bench,size,value" >"$CSV"
for i in $(seq 1 "$ROUNDS"); do
    for b in "${BENCHES[@]}"; do
        for impl in "${IMPLS[@]}"; do
            if ! run_one "$impl" "$b" 2>"$OUT/$impl.$b.err" | to_csv "$i" "$impl" "${b#osu_}" >>"$CSV"; then
                echo "osu.sh: $impl $b failed in round $i; see $OUT/$impl.$b.err" >&2
            fi
        done
    done
    printf '.' >&2
done
echo >&2

echo "## OSU $(basename "$SRC"), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $NP ranks," \
    "$ROUNDS rounds${TRANSPORT:+, quay over $TRANSPORT}${VS_ENV:+, quay off against on: $VS_ENV}"
if [ -n "$VS_ENV" ]; then
    "$ROOT/bench/mode_report.sh" --names off,on --higher '^(bw|bibw|mbw_mr|i.*)$' "$CSV"
elif [ "$QUAY_ONLY" = 1 ]; then
    awk -F, 'NR > 1 { k = $3 " " $4; v[k] = v[k] " " $5 }
        END { for (k in v) printf "%-22s %s\n", k, v[k] }' "$CSV" | sort -k1,1 -k2,2n
else
    "$ROOT/bench/mode_report.sh" --higher '^(bw|bibw|mbw_mr|i.*)$' "$CSV"
fi
echo "raw values: $CSV"
