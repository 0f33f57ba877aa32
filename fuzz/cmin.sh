#!/usr/bin/env bash
# fuzz/cmin.sh — merge campaign finds into fuzz/corpus/<harness>/ and keep
# it small: afl-cmin (edges, hit counts ignored), then a greedy cover (the
# seed-* files and the named reproducers, q-<name>, first: they always
# stay; then, again and again, the file that adds the most edges not yet
# covered, while it adds at least MIN_GAIN), renamed q-<sha1 prefix>.
#
#   fuzz/cmin.sh [-b BUILD_DIR] [-g MIN_GAIN] HARNESS [DIR...]
#
#   -b  the AFL++ build (default build-fuzz-afl/, as fuzz/smoke.sh makes it)
#   -g  1 (default): every edge of the merged inputs stays covered; more
#       drops the files that add fewer edges each (a smaller corpus)
#   DIR afl-fuzz output directories (their default/queue is taken), queue
#       directories or plain directories of inputs; none: re-reduce the
#       corpus as it is
#
# Afterwards replay the corpus with a plain and an ASan replay build (a
# file that violates an invariant belongs in fuzz/crashes/, fuzz/README.md).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build-fuzz-afl
GAIN=1
while getopts "b:g:h" opt; do
    case $opt in
    b) BUILD=$OPTARG ;;
    g) GAIN=$OPTARG ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
H=$1
shift
PROG=$BUILD/fuzz/fuzz_$H
CORPUS=$ROOT/fuzz/corpus/$H
[ -x "$PROG" ] || { echo "no $PROG (build it: fuzz/smoke.sh -t 0 -b $BUILD $H)"; exit 2; }
for tool in afl-cmin afl-showmap sha1sum; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found"; exit 77; }
done

export AFL_ALLOW_TMP=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:symbolize=0:detect_leaks=0}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/all" "$WORK/maps"
cp "$CORPUS"/* "$WORK/all/"
n=0
for d in "$@"; do
    [ -d "$d/default/queue" ] && d=$d/default/queue
    for f in "$d"/*; do
        [ -f "$f" ] && cp "$f" "$WORK/all/in$((n += 1))"
    done
done
afl-cmin -e -m none -t 5000 -i "$WORK/all" -o "$WORK/min" -- "$PROG" >"$WORK/cmin.log" 2>&1 ||
    { cat "$WORK/cmin.log"; exit 1; }
# A find is named q- and 12 hex digits; seeds and every other q-<name>
# (a reproducer) are pinned: they stay, and enter the cover first.
is_find() { [[ $1 =~ ^q-[0-9a-f]{12}$ ]]; }
pinned() { [[ $1 == seed-* ]] || { [[ $1 == q-* ]] && ! is_find "$1"; }; }
cp "$CORPUS"/seed-* "$WORK/min/" 2>/dev/null || true
named=0
for f in "$CORPUS"/q-*; do
    if [ -f "$f" ] && ! is_find "$(basename "$f")"; then
        cp "$f" "$WORK/min/"
        named=$((named + 1))
    fi
done
afl-showmap -e -m none -t 5000 -i "$WORK/min" -o "$WORK/maps" -- "$PROG" >/dev/null 2>&1 || true

# Greedy cover: the pinned files first, then repeatedly the file that
# adds the most edges (the smaller on a tie), until nothing adds any.
for f in "$WORK/maps"/*; do
    b=$(basename "$f")
    s=$(stat -c %s "$WORK/min/$b")
    pin=0
    if pinned "$b"; then pin=1; fi
    awk -F: -v file="$b" -v size="$s" -v pin="$pin" '{ print file, size, $1, pin }' "$f"
done | awk -v mingain="$GAIN" '
    { list[$1] = list[$1] " " $3; size[$1] = $2; if ($4) pin[$1] = 1 }
    function take(f,   n, e, i) {
        keep[f] = 1
        n = split(list[f], e, " ")
        for (i = 1; i <= n; i++) covered[e[i]] = 1
    }
    END {
        for (f in pin) take(f)
        for (;;) {
            best = ""; gain = 0
            for (f in list) {
                if (f in keep) continue
                n = split(list[f], e, " "); g = 0
                for (i = 1; i <= n; i++) if (!(e[i] in covered)) g++
                if (g > gain || (g == gain && g > 0 && size[f] < size[best])) { best = f; gain = g }
            }
            if (gain == 0 || gain < mingain) break
            take(best)
        }
        for (f in keep) print f
    }' >"$WORK/keep"

for f in "$CORPUS"/q-*; do
    if [ -f "$f" ] && is_find "$(basename "$f")"; then rm -f "$f"; fi
done
kept=0
while read -r b; do
    pinned "$b" && continue # (where it was, under its name)
    cp "$WORK/min/$b" "$CORPUS/q-$(sha1sum <"$WORK/min/$b" | cut -c1-12)"
    kept=$((kept + 1))
done <"$WORK/keep"
echo "fuzz_$H: $(ls "$WORK/all" | wc -l) inputs, afl-cmin kept $(ls "$WORK/min" | wc -l)," \
    "the cover $kept (+ $(ls "$CORPUS"/seed-* | wc -l) seeds and $named named) in $CORPUS"
