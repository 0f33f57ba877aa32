#!/bin/sh
# tests/mpich/run.sh — build MPICH's own MPI tests (test/mpi of an MPICH
# source tree you fetched yourself) against quay's MPI binding, with quay's
# stand-in for MPICH's harness (tests/mpich/mtest.c, include/), and run
# each with quayrun on shared memory and on TCP. Downloads nothing.
#
#   tests/mpich/run.sh [-a] [-t TRANSPORTS] [-k REGEX] [-o WORKDIR]
#                      MPICH_SOURCE_DIR [BUILD_DIR]
#
# MPICH_SOURCE_DIR  an MPICH tree (or its test/mpi folder), e.g. from
#                   git clone https://github.com/pmodels/mpich
# BUILD_DIR         quay's build folder (default: build), which holds
#                   mpi/quaycc and tools/quayrun
# -a                also try every other test of the pt2pt, coll, comm and
#                   init testlists: reported, never counted as failures
#                   (most need functions outside the subset: "nobuild")
# -t TRANSPORTS     default "shm tcp"
# -k REGEX          only the tests whose folder/name matches (an ERE)
# -o WORKDIR        binaries and logs (default: BUILD_DIR/mpich-tests)
#
# The tests expected to pass are tests/mpich/expected.txt, one
# "folder/test ranks [arg=...]" a line, as in MPICH's testlists. Each runs
# at that rank count with the options of its testlist line (resultTest=,
# timeLimit=, mem=), one at a time. A run is judged as MPICH's runtests
# judges it: by default, exit status 0 and the output is " No Errors"
# (once) and nothing else; "Test Skipped" is a skip; resultTest=TestStatus
# (exitst1, exitst2) wants a non-zero status from the launcher instead.
# Time limit: timeLimit= if given, else $MPITEST_TIMEOUT (default 180, as
# runtests), times $MPITEST_TIMEOUT_MULTIPLIER.
#
# Prints a table (test, ranks, one column per transport, notes) and a
# summary. Exit status: 0 if every expected test passed or skipped on
# every transport, 1 if one did not, 2 for a usage or set-up error.
# Environment: QUAYCC_CC (the compiler, through quaycc), MPICH_TESTS_CFLAGS
# (default -O2), and anything the ranks read (QUAY_SEND_COPY=0 ...).
#
# POSIX sh; needs timeout(1) (coreutils) and awk.
set -u

here=$(cd -P -- "$(dirname -- "$0")" && pwd) || exit 2
all=0
transports="shm tcp"
filter=""
work=""
usage() {
    sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
while getopts at:k:o:h opt; do
    case $opt in
    a) all=1 ;;
    t) transports=$OPTARG ;;
    k) filter=$OPTARG ;;
    o) work=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi

if [ -d "$1/test/mpi/pt2pt" ]; then
    src=$1/test/mpi
elif [ -d "$1/pt2pt" ] && [ -d "$1/coll" ]; then
    src=$1
else
    echo "run.sh: $1 is not an MPICH source tree (no test/mpi/pt2pt)" >&2
    exit 2
fi
src=$(cd -P -- "$src" && pwd) || exit 2
build=$(cd -P -- "${2:-build}" 2>/dev/null && pwd) || {
    echo "run.sh: no build folder ${2:-build}" >&2
    exit 2
}
quaycc=$build/mpi/quaycc
quayrun=$build/tools/quayrun
for f in "$quaycc" "$quayrun"; do
    [ -x "$f" ] || { echo "run.sh: $f missing: build quay first" >&2; exit 2; }
done
command -v timeout >/dev/null 2>&1 || { echo "run.sh: needs timeout(1)" >&2; exit 2; }
for t in $transports; do
    case $t in shm | tcp) ;; *) echo "run.sh: unknown transport $t" >&2; exit 2 ;; esac
done
work=${work:-$build/mpich-tests}
mkdir -p "$work" || exit 2
work=$(cd -P -- "$work" && pwd) || exit 2
# Fresh binaries every time: the tree or quay may have changed.
rm -rf "${work:?}/bin" "${work:?}/logs" "${work:?}/run"
mkdir -p "$work/bin" "$work/logs" "$work/run" || exit 2
cflags=${MPICH_TESTS_CFLAGS:--O2}
deftime=${MPITEST_TIMEOUT:-180}
mult=${MPITEST_TIMEOUT_MULTIPLIER:-1}
# Memory for mem= (GB, as runtests compares it).
memgb=$(awk '/^MemTotal:/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
memgb=${memgb:-0}

# ---- the harness -------------------------------------------------------------
# Our own code, so its warnings are shown (MPICH's tests build quietly).
for f in mtest run_main; do
    # shellcheck disable=SC2086 # cflags is a word list
    if ! "$quaycc" -std=c11 -Wall -Wextra $cflags -I"$here/include" \
        -c "$here/$f.c" -o "$work/bin/$f.o" >"$work/logs/$f.build" 2>&1; then
        cat "$work/logs/$f.build" >&2
        echo "run.sh: the harness does not build" >&2
        exit 2
    fi
    cat "$work/logs/$f.build" >&2
done

# ---- what to run -------------------------------------------------------------
# One entry a line: kind (E expected, X extra), folder/name, ranks, arg=...
list=$work/list
grep -v '^[[:space:]]*\(#\|$\)' "$here/expected.txt" | sed 's/#.*//' |
    awk 'NF >= 2 { printf "E"; for (i = 1; i <= NF; i++) printf " %s", $i; print "" }' >"$list"
if [ "$all" = 1 ]; then
    for d in pt2pt coll comm init; do
        tl=$src/$d/testlist.in
        [ -f "$tl" ] || tl=$src/$d/testlist
        # Lines that only set MPICH's own variables (env=) rerun the same
        # program: one run per (name, ranks, args).
        awk -v d="$d" '/^[[:space:]]*#/ || NF < 2 || /env=/ { next }
            { e = d "/" $1 " " $2
              for (i = 3; i <= NF; i++) if ($i ~ /^arg=/) e = e " " $i
              if (!(e in seen)) { seen[e] = 1; print "X " e } }' "$tl"
    done | awk 'NR == FNR { sub(/^E /, ""); have[$0] = 1; next }
        { e = $0; sub(/^X /, "", e); if (!(e in have)) print }' "$list" - >"$list.x"
    cat "$list.x" >>"$list"
fi
if [ -n "$filter" ]; then
    awk -v re="$filter" '$2 ~ re' "$list" >"$list.f" && mv "$list.f" "$list"
fi

# ---- building one test -----------------------------------------------------------
# build folder name: makes bin/folder/name once; 0 if it exists after.
# The source and flags follow the folder's Makefile.am (irecv_any is
# recv_any.c with -DTEST_NB); tests that define run() get run_main.o.
build_test() {
    bdir=$work/bin/$1
    bin=$bdir/$2
    [ -x "$bin" ] && return 0
    [ -f "$bin.failed" ] && return 1
    mkdir -p "$bdir"
    rules=$(awk -v n="$2" '
        ($1 == n "_SOURCES" || $1 == n "_CPPFLAGS") && $2 == "=" {
            k = ($1 == n "_SOURCES") ? "S" : "C"
            for (i = 3; i <= NF; i++) if ($i !~ /^\$\(/) print k, $i }' \
        "$src/$1/Makefile.am" 2>/dev/null)
    srcs=$(printf '%s\n' "$rules" | awk '$1 == "S" { printf " %s", $2 }')
    defs=$(printf '%s\n' "$rules" | awk '$1 == "C" { printf " %s", $2 }')
    [ -n "$srcs" ] || srcs=" $2.c"
    files="" runmain=""
    for s in $srcs; do
        [ -f "$src/$1/$s" ] || {
            echo "no source $1/$s" >"$bin.failed"
            return 1
        }
        files="$files $src/$1/$s"
        grep -q '^int run(const char' "$src/$1/$s" && runmain=$work/bin/run_main.o
    done
    # shellcheck disable=SC2086 # word lists
    if (cd "$bdir" && LC_ALL=C "$quaycc" $cflags $defs -I"$here/include" -o "$bin" $files \
        "$work/bin/mtest.o" $runmain -lm) >"$work/logs/$1.$2.build" 2>&1; then
        return 0
    fi
    rm -f "$bin"
    # Why, in a word: the first missing header, type or function (the
    # compiler ran with LC_ALL=C, so names are in ASCII quotes).
    awk '/fatal error: .*: No such file/ {
             sub(/: No such file.*/, ""); sub(/.*fatal error: /, ""); print "no " $0; exit }
         /error: .*undeclared|error: unknown type name|error: implicit declaration|undefined reference to/ {
             s = $0; sub("^[^`\047]*[`\047]", "", s); sub("\047.*", "", s)
             print "needs " s; exit }' "$work/logs/$1.$2.build" >"$bin.failed"
    [ -s "$bin.failed" ] || echo "does not build" >"$bin.failed"
    return 1
}

# ---- judging one run ------------------------------------------------------------------
# judge RESULTTEST STATUS TIMEDOUT OUTFILE: prints pass, skip or fail:why.
# Mirrors runtests' check_result and its resultTest functions.
judge() {
    # shellcheck disable=SC2046 # four numbers
    set -- "$1" "$2" "$3" $(awk '
        /^[ \t\r]*No [Ee]rrors[ \t\r]*$/ && !ne { ne = 1; next }
        /^[ \t\r]*Test Skipped[ \t\r]*$/ { sk++; next }
        /^(MPICH: |WARNING: |(Abort.*)?application called MPI_Abort)/ { warn++; next }
        /(FORTRAN STOP|requesting checkpoint|checkpoint completed)[ \t\r]*$/ { next }
        { stray++ }
        END { print ne + 0, sk + 0, warn + 0, stray + 0 }' "$4")
    rt=$1 st=$2 to=$3 ne=$4 sk=$5 warn=$6 stray=$7
    case $rt in
    TestStatus | TestErrFatal)
        # A time limit reached is a non-zero status from MPICH's mpiexec.
        if [ "$st" -ne 0 ] || [ "$to" = 1 ]; then echo pass; else echo "fail:status=0"; fi
        return ;;
    esac
    if [ "$to" = 1 ]; then echo "fail:timeout"; return; fi
    case $rt in
    TestBench)
        if [ "$st" -eq 0 ]; then echo pass; else echo "fail:status=$st"; fi
        return ;;
    TestAllowWarnings) warn=0 ;;
    esac
    # Every reason, as runtests prints each ("," between them).
    why=""
    if [ "$ne" = 0 ] && { [ "$sk" = 0 ] || [ "$rt" = TestStatusNoErrors ]; }; then
        why="no-verdict"
    fi
    if [ "$stray" != 0 ] || [ "$warn" != 0 ]; then why="${why:+$why,}output"; fi
    if [ "$rt" = TestStatusNoErrors ]; then
        [ "$st" -ne 0 ] || why="${why:+$why,}status=0"
    elif [ "$st" -ne 0 ]; then
        why="${why:+$why,}status=$st"
    fi
    if [ -n "$why" ]; then
        echo "fail:$why"
    elif [ "$sk" != 0 ]; then
        echo skip
    else
        echo pass
    fi
}

now() { date +%s; }

# ---- the runs -----------------------------------------------------------------------
results=$work/results
: >"$results"
rm -f "$results.failed"
ntr=0
for t in $transports; do ntr=$((ntr + 1)); done
while read -r kind test np rest; do
    folder=${test%%/*}
    name=${test#*/}
    args=""
    for a in $rest; do args="$args ${a#arg=}"; done
    tl=$src/$folder/testlist.in
    [ -f "$tl" ] || tl=$src/$folder/testlist
    # The testlist line for (name, ranks, args): its options.
    opts=$(awk -v n="$name" -v np="$np" -v want="$rest" '
        $1 != n || $2 != np || /env=/ { next }
        { a = ""; o = ""
          for (i = 3; i <= NF; i++)
              if ($i ~ /^arg=/) a = a (a == "" ? "" : " ") $i; else o = o " " $i
          if (a == want) { print "found" o; exit } }' "$tl" 2>/dev/null)
    note=""
    case $opts in found*) ;; *) note="not in testlist" ;; esac
    rtest="" tlimit="" mem=""
    for o in $opts; do
        case $o in
        resultTest=*) rtest=${o#*=} ;;
        timeLimit=*) tlimit=${o#*=} ;;
        mem=*) mem=${o#*=} ;;
        xfail=*) note="${note:+$note, }xfail in MPICH" ;;
        esac
    done
    [ "$kind" = X ] && note="${note:+$note, }extra"
    limit=$(awk -v t="${tlimit:-$deftime}" -v m="$mult" 'BEGIN { v = t * m; printf "%d", (v == int(v)) ? v : int(v) + 1 }')
    label="$test$args"
    tag=$(printf '%s' "$folder.$name.$np$args" | tr ' =/' '__-')
    line="$label|$np"
    failed_exp=""
    if ! build_test "$folder" "$name"; then
        why=$(cat "$work/bin/$folder/$name.failed")
        for t in $transports; do line="$line|nobuild"; done
        line="$line|${note:+$note; }$why"
        [ "$kind" = E ] && failed_exp=" nobuild: $why"
    elif [ -n "$mem" ] && awk -v m="$mem" -v have="$memgb" 'BEGIN { exit !(m > have) }'; then
        for t in $transports; do line="$line|skip"; done
        line="$line|${note:+$note; }needs ${mem} GB"
    else
        rdir=$work/run/$folder
        mkdir -p "$rdir"
        for t in $transports; do
            out=$work/logs/$tag.$t.log
            t0=$(now)
            # shellcheck disable=SC2086 # args are words
            (cd "$rdir" && exec timeout -k 10 "$limit" "$quayrun" -n "$np" --transport "$t" \
                "$work/bin/$folder/$name" $args) </dev/null >"$out" 2>&1
            st=$?
            secs=$(($(now) - t0))
            to=0
            # 124: timeout's own status; 137: killed after its -k grace.
            if [ "$st" -eq 124 ] || { [ "$st" -eq 137 ] && [ "$secs" -ge "$limit" ]; }; then
                to=1
            fi
            r=$(judge "${rtest:-TestNormal}" "$st" "$to" "$out")
            case $r in
            fail:timeout) r="fail:timeout(${limit}s)" ;;
            pass | skip) r="$r ${secs}s"; rm -f "$out" ;;
            esac
            case $r in
            fail*) [ "$kind" = E ] && failed_exp="$failed_exp $t:${r#fail:} (logs/$tag.$t.log)" ;;
            esac
            line="$line|$r"
        done
        line="$line|$note"
    fi
    printf '%s\n' "$line" | tee -a "$results" | awk -F'|' '{ printf "  %s\n", $0 }' >&2
    [ -n "$failed_exp" ] && printf '%s:%s\n' "$label" "$failed_exp" >>"$results.failed"
done <"$list"

# ---- the table and the summary ---------------------------------------------------------
{
    printf 'test|ranks'
    for t in $transports; do printf '|%s' "$t"; done
    printf '|notes\n'
    cat "$results"
} | awk -F'|' '
    # Long argument lists (-a) are cut, so that the columns stay readable.
    NR > 1 && length($1) > 44 { $1 = substr($1, 1, 41) "..." }
    { for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) }
      if (NF > nf) nf = NF }
    END { for (r = 1; r <= NR; r++) {
            s = ""
            for (i = 1; i <= nf; i++) s = s sprintf((i < nf) ? ("%-" w[i] "s  ") : "%s", cell[r, i])
            sub(/ +$/, "", s); print s
            if (r == 1) { s = ""; for (i = 1; i <= nf; i++) { d = ""; for (k = 0; k < w[i]; k++) d = d "-"; s = s d (i < nf ? "  " : "") } print s } } }'

echo
awk -F'|' -v ntr="$ntr" -v trs="$transports" '
    BEGIN { split(trs, tn, " ") }
    { extra = ($NF ~ /extra/)
      for (i = 1; i <= ntr; i++) {
          r = $(2 + i); sub(/ .*/, "", r); sub(/[:(].*/, "", r)
          k = (extra ? "x" : "e") SUBSEP tn[i] SUBSEP r; n[k]++
      }
      if (extra) { nx++ } else { ne++ } }
    END {
      for (i = 1; i <= ntr; i++) {
          t = tn[i]
          printf "%s: expected %d: %d passed, %d skipped, %d failed, %d did not build\n", t, ne,
              n["e", t, "pass"], n["e", t, "skip"], n["e", t, "fail"], n["e", t, "nobuild"]
          if (nx)
              printf "%s: others %d: %d passed, %d skipped, %d failed, %d did not build\n", t, nx,
                  n["x", t, "pass"], n["x", t, "skip"], n["x", t, "fail"], n["x", t, "nobuild"]
      } }' "$results"
echo "MPICH tests: $src; logs: $work/logs"
if [ -s "$results.failed" ]; then
    echo "expected to pass, did not:"
    sed 's/^/  /' "$results.failed"
    exit 1
fi
exit 0
