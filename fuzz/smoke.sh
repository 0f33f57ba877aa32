#!/usr/bin/env bash
# fuzz/smoke.sh — a time-boxed afl-fuzz run of every harness (or of the
# ones named), with ASan + UBSan, seeded from fuzz/corpus/<harness> with
# fuzz/dict/<harness>.dict. CI runs it with the default 60 s per harness;
# a longer -t makes it a campaign (fuzz/README.md).
#
#   fuzz/smoke.sh [-t SECONDS] [-b BUILD_DIR] [-o OUT_DIR] [-p PARALLEL]
#                 [-c CORPUS_ROOT] [decode|engine|sim|restore ...]
#
#   -t  seconds per harness (default 60, or $FUZZ_SECONDS)
#   -b  build tree of the AFL++ programs (default build-fuzz-afl/ at the
#       repository root); configured here with afl-clang-fast,
#       -DQUAY_FUZZ=ON -DQUAY_SANITIZE=ON if it is not, and the programs
#       rebuilt if the sources changed
#   -o  afl-fuzz output directories go to OUT_DIR/<harness> (default
#       BUILD_DIR/smoke); whatever was there is removed first
#   -p  harnesses fuzzed at once (default 1)
#   -c  start from CORPUS_ROOT/<harness>/ instead of fuzz/corpus/<harness>/
#       (e.g. a previous campaign's minimised queues)
#
# Exit status: 0 no crash; 1 a harness crashed (each crash file is listed
# with the command that replays it) or afl-fuzz could not run; 77 afl-fuzz
# or afl-clang-fast is not installed (CTest's "skipped"). Hangs (a run
# over the -t limit of afl-fuzz) are reported, not failed on.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_EACH=${FUZZ_SECONDS:-60}
BUILD=$ROOT/build-fuzz-afl
OUT=
PARALLEL=1
CORPUS=$ROOT/fuzz/corpus
while getopts "t:b:o:p:c:h" opt; do
    case $opt in
    t) SECONDS_EACH=$OPTARG ;;
    b) BUILD=$OPTARG ;;
    o) OUT=$OPTARG ;;
    p) PARALLEL=$OPTARG ;;
    c) CORPUS=$OPTARG ;;
    *) sed -n '2,27p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
HARNESSES=("$@")
[ ${#HARNESSES[@]} -eq 0 ] && HARNESSES=(decode engine sim restore)
OUT=${OUT:-$BUILD/smoke}

for tool in afl-fuzz afl-clang-fast; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "fuzz/smoke.sh: $tool not found (Debian package afl++): skipped"
        exit 77
    fi
done

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    gen=()
    command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    mkdir -p "$BUILD"
    CC=afl-clang-fast cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DQUAY_FUZZ=ON -DQUAY_SANITIZE=ON -DBUILD_TESTING=OFF >"$BUILD/fuzz-configure.log" 2>&1 || {
        cat "$BUILD/fuzz-configure.log"
        exit 1
    }
fi
# Built every time (a no-op when up to date): programs older than the
# sources would fuzz code that no longer exists.
targets=()
for h in "${HARNESSES[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$BUILD" --target "${targets[@]}" -j "${JOBS:-2}"

# afl-fuzz without a terminal, on machines not set up for it.
export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_NO_AFFINITY=1 AFL_SKIP_CRASHES=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:symbolize=0:detect_leaks=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}

fuzz_one() {
    local h=$1 dir=$OUT/$1 dict=() log
    rm -rf "$dir"
    mkdir -p "$dir"
    log=$dir/afl.log
    [ -f "$ROOT/fuzz/dict/$h.dict" ] && dict=(-x "$ROOT/fuzz/dict/$h.dict")
    # -m none: ASan reserves far more virtual memory than afl's default
    # limit; -t: per input, generous for fuzz_sim under ASan.
    afl-fuzz -i "$CORPUS/$h" -o "$dir" "${dict[@]}" -m none -t 5000 \
        -V "$SECONDS_EACH" -- "$BUILD/fuzz/fuzz_$h" >"$log" 2>&1 || true
}

# stat_of <fuzzer_stats> <key>
stat_of() { awk -F' *: *' -v k="$2" '$1 == k { print $2 }' "$1"; }

summary() {
    local h=$1 st=$OUT/$1/default/fuzzer_stats
    if [ ! -f "$st" ]; then
        echo "fuzz_$h: afl-fuzz did not run; its log:"
        tail -n 30 "$OUT/$h/afl.log"
        return 1
    fi
    val() { stat_of "$st" "$1"; }
    local crashes hangs
    crashes=$(val saved_crashes)
    [ -n "$crashes" ] || crashes=$(val unique_crashes)
    hangs=$(val saved_hangs)
    [ -n "$hangs" ] || hangs=$(val unique_hangs)
    printf 'fuzz_%-8s %10s execs  %8s execs/s  %6s edges (%s)  corpus %4s  crashes %s  hangs %s\n' \
        "$h" "$(val execs_done)" "$(val execs_per_sec)" "$(val edges_found)" \
        "$(val bitmap_cvg)" "$(val corpus_count)" "$crashes" "$hangs"
    if [ "${crashes:-0}" != 0 ]; then
        for c in "$OUT/$h"/default/crashes/id*; do
            echo "  crash: $c"
            echo "    replay: FUZZ_VERBOSE=1 $BUILD/fuzz/fuzz_$h '$c'"
        done
        return 1
    fi
    return 0
}

echo "fuzz/smoke.sh: ${SECONDS_EACH}s per harness: ${HARNESSES[*]} (output in $OUT)"
pids=()
for h in "${HARNESSES[@]}"; do
    fuzz_one "$h" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$PARALLEL" ]; then
        wait "${pids[0]}"
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do wait "$p"; done

status=0
for h in "${HARNESSES[@]}"; do
    summary "$h" || status=1
done
exit $status
