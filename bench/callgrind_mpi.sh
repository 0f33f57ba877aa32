#!/usr/bin/env bash
# bench/callgrind_mpi.sh — where the instructions of an MPI program's
# small messages go, layer by layer: the MPI binding (mpi/), the runtime
# (adapters/rt/), the transport (adapters/shm/ or sockets/), the engine
# (src/) and libc, per message or per collective call, on every rank.
#
#   bench/callgrind_mpi.sh [LOOP...]      # default: window pingpong bcast allreduce barrier
#
# Each LOOP of bench/mpi/mpi_loops.c (OSU's loops: window = osu_mbw_mr's
# 64 MPI_Isend / MPI_Irecv + MPI_Waitall, pingpong = osu_latency's
# MPI_Send / MPI_Recv, and the collectives) runs under quayrun with every
# rank in callgrind, counting only inside the loop (--toggle-collect). A
# waiting rank blocks at once instead of polling (QUAY_SPIN=0,
# QUAY_SPIN_US=0), so that idle polls do not blur the counts; what is left
# of the waits is the polls that find work and the blocking calls.
#
# Per rank and layer: self instructions of the functions whose source
# file is in that layer (an inlined function counts where its source is),
# divided by the messages the loop carries from rank 0 (window: ITERS x
# 64; pingpong: ITERS x 2, one each way) or by the calls (collectives).
#
# Environment: BUILD (default build-bench; needs bench/mpi/mpi_loops_quay
# and tools/quayrun), NP (2), ITERS (window 300, pingpong 3000,
# collectives 3000), SIZE (8), TRANSPORT (shm), OUT (callgrind files,
# default $BUILD/callgrind-mpi), SRC (the source tree BUILD was built
# from, for the layer split; default this one: another commit's build,
# e.g. a git worktree, compares before and after).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build-bench}
case $BUILD in /*) ;; *) BUILD=$here/$BUILD ;; esac
NP=${NP:-2}
SIZE=${SIZE:-8}
TRANSPORT=${TRANSPORT:-shm}
OUT=${OUT:-$BUILD/callgrind-mpi}
SRC=${SRC:-$here}
loops=("$@")
[ ${#loops[@]} -gt 0 ] || loops=(window pingpong bcast allreduce barrier)

prog=$BUILD/bench/mpi/mpi_loops_quay
run=$BUILD/tools/quayrun
for f in "$prog" "$run"; do
    [ -x "$f" ] || { echo "callgrind_mpi.sh: $f missing (build $BUILD first)" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "callgrind_mpi.sh: valgrind not installed" >&2; exit 2; }
mkdir -p "$OUT"

echo "quay $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?'); $NP ranks," \
     "$TRANSPORT, $SIZE-byte messages; $(valgrind --version)"
printf '%-10s %-5s %9s %9s %9s %9s %9s %9s %9s\n' loop rank per total mpi rt transport engine libc

for loop in "${loops[@]}"; do
    case $loop in
    window) iters=${ITERS:-300}; per=$((iters * 64)); unit=msg ;;
    pingpong) iters=${ITERS:-3000}; per=$((iters * 2)); unit=msg ;;
    bcast | allreduce | barrier) iters=${ITERS:-3000}; per=$iters; unit=call ;;
    *) echo "callgrind_mpi.sh: unknown loop $loop" >&2; exit 2 ;;
    esac
    rm -f "$OUT/$loop".*.out
    QUAY_SPIN=0 QUAY_SPIN_US=0 timeout 900 "$run" -n "$NP" --transport "$TRANSPORT" -- \
        valgrind --tool=callgrind --toggle-collect='measured' \
        --callgrind-out-file="$OUT/$loop.%q{QUAY_RANK}.out" \
        "$prog" "$loop" "$iters" "$SIZE" >"$OUT/$loop.log" 2>&1 ||
        { echo "callgrind_mpi.sh: $loop failed (log: $OUT/$loop.log)" >&2; exit 1; }
    for ((r = 0; r < NP; r++)); do
        f=$OUT/$loop.$r.out
        [ -f "$f" ] || { echo "callgrind_mpi.sh: no $f" >&2; exit 1; }
        callgrind_annotate --auto=no --threshold=100 "$f" 2>/dev/null |
            awk -v per="$per" -v loop="$loop" -v r="$r" -v unit="$unit" -v here="$SRC/" '
            /^ *[0-9][0-9,]* +\(/ {
                n = $1; gsub(",", "", n)
                line = $0
                if (line ~ /PROGRAM TOTALS/) { total = n; next }
                # the function field: path:function [object]
                f = line; sub(/^ *[0-9,]+ +\([^)]*\) +/, "", f)
                sub(here, "", f)
                if (f ~ /^mpi\//) mpi += n
                else if (f ~ /^adapters\/rt\//) rt += n
                else if (f ~ /^adapters\//) tp += n
                else if (f ~ /^src\//) eng += n
                else if (f ~ /libc\.so|^\.\/|^\.\.\//) libc += n
                else other += n
            }
            END {
                printf "%-10s %-5s %9s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", loop, r, unit,
                       total / per, mpi / per, rt / per, tp / per, eng / per, libc / per
            }'
    done
done
echo "(per: instructions per $SIZE-byte message carried, or per collective call;" \
     "files in $OUT)"
