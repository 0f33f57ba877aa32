#!/usr/bin/env bash
# fuzz/coverage.sh — line and branch coverage of src/ reached by the fuzz
# corpora: a gcc --coverage build of the replay programs, every file of
# fuzz/corpus/<harness>/ replayed, lcov summaries per src/ folder.
#
#   fuzz/coverage.sh [-b BUILD_DIR] [-c CORPUS_ROOT] [-H] [decode|engine|sim|restore ...]
#
#   -b  build tree (default build-fuzz-cov/ at the repository root); it is
#       configured here (gcc, Debug, --coverage, QUAY_FUZZ=ON,
#       BUILD_TESTING=OFF) and its old counters are reset
#   -c  replay CORPUS_ROOT/<harness>/ instead of fuzz/corpus/<harness>/
#       (e.g. an afl-fuzz output's queue, see fuzz/README.md)
#   -H  also write an HTML report (genhtml) to BUILD_DIR/coverage-html
#
# Prints, for src/engine, src/flowctl, src/collectives and src/ as a
# whole, the lines and branches hit, then the per-file table of lcov.
# Exit status 0, or 77 when lcov or gcc is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build-fuzz-cov
CORPUS=$ROOT/fuzz/corpus
HTML=0
while getopts "b:c:Hh" opt; do
    case $opt in
    b) BUILD=$OPTARG ;;
    c) CORPUS=$OPTARG ;;
    H) HTML=1 ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
HARNESSES=("$@")
[ ${#HARNESSES[@]} -eq 0 ] && HARNESSES=(decode engine sim restore)

for tool in lcov gcc gcov; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "fuzz/coverage.sh: $tool not found (Debian packages lcov, gcc): skipped"
        exit 77
    fi
done

gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
mkdir -p "$BUILD"
CC=gcc cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS="--coverage" -DCMAKE_EXE_LINKER_FLAGS="--coverage" \
    -DQUAY_FUZZ=ON -DQUAY_FUZZ_ENGINE=none -DBUILD_TESTING=OFF >"$BUILD/fuzz-configure.log" 2>&1 || {
    cat "$BUILD/fuzz-configure.log"
    exit 1
}
targets=()
for h in "${HARNESSES[@]}"; do targets+=("fuzz_${h}_replay"); done
cmake --build "$BUILD" --target "${targets[@]}" -j "${JOBS:-2}" >/dev/null

RC=(--rc lcov_branch_coverage=1)
lcov --quiet "${RC[@]}" --zerocounters --directory "$BUILD"
for h in "${HARNESSES[@]}"; do
    prog=$(find "$BUILD" -name "fuzz_${h}_replay" -type f -perm -u+x | head -n 1)
    echo "replaying $CORPUS/$h"
    # A corpus file that violates an invariant stops its replay; the
    # coverage of what ran is kept.
    "$prog" "$CORPUS/$h" || echo "  (fuzz_${h}_replay stopped: exit $?)"
done

INFO=$BUILD/coverage.info
lcov --quiet "${RC[@]}" --capture --directory "$BUILD" --output-file "$INFO.all" 2>/dev/null
lcov --quiet "${RC[@]}" --extract "$INFO.all" "$ROOT/src/*" --output-file "$INFO"

summary() { # <label> <pattern>
    local f=$BUILD/cov-${1//\//-}.info
    lcov --quiet "${RC[@]}" --extract "$INFO" "$2" --output-file "$f" 2>/dev/null
    lcov "${RC[@]}" --summary "$f" 2>&1 |
        awk -v l="$1" '/lines\.*:/ { ln = $2 " " $3 " " $4 " " $5 " " $6 }
                       /branches\.*:/ { br = $2 " " $3 " " $4 " " $5 " " $6 }
                       END { printf "%-16s lines %-28s branches %s\n", l, ln, br }'
}
echo
summary src/engine "$ROOT/src/engine/*"
summary src/flowctl "$ROOT/src/flowctl/*"
summary src/collectives "$ROOT/src/collectives/*"
summary src "$ROOT/src/*"
echo
lcov "${RC[@]}" --list "$INFO" 2>/dev/null | sed "s|$ROOT/||"
if [ "$HTML" = 1 ]; then
    genhtml --quiet "${RC[@]}" --output-directory "$BUILD/coverage-html" "$INFO"
    echo "HTML report: $BUILD/coverage-html/index.html"
fi
