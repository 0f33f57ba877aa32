#!/usr/bin/env bash
# bench/compare.sh — quay against MPICH, side by side, in one go.
#
#   bench/compare.sh [-n RANKS] [--quick] [--rounds K] [--stat median|min] [BUILD_DIR]
#
# 1. Builds quay's bench targets (qbench_quay, raw_tcp, quayrun) with
#    cmake in BUILD_DIR (default: build-bench at the top of the source
#    tree; a new directory is configured Release, QUAY_BENCH=ON,
#    BUILD_TESTING=OFF; an existing one keeps its settings but gets
#    Release and QUAY_BENCH=ON).
# 2. Builds the same bench/mpi/qbench.c with MPICH's mpicc into
#    BUILD_DIR/bench/mpi/qbench_mpich (skipped, with a message, when mpicc
#    or mpiexec is missing: Debian package mpich).
# 3. Runs, each with --csv:
#      mpiexec -n RANKS qbench_mpich                    (MPICH)
#      quayrun -n RANKS qbench_quay                     (quay, shm)
#      quayrun -n RANKS --transport tcp qbench_quay     (quay, tcp)
#      raw_tcp                                          (raw loopback TCP)
#    the last two only when quayrun has the TCP transport ("tcp: not
#    available" otherwise).
# 4. Prints a table per benchmark — size | MPICH | quay shm | shm/MPICH |
#    quay tcp | raw tcp | tcp/raw; qbench's match variants (match_posted_in,
#    match_posted_rev, match_unexp_in, match_unexp_rev) have the queue
#    depth in the size column and us per receive — then, for match, the
#    reverse / in-order ratio and t_u (ns per failed compare) per depth
#    for each implementation, and the issue's targets (with "matching
#    flat": quay's t_u at the deepest point, 1000 or more, at most 1 ns),
#    and writes every figure to
#    BUILD_DIR/bench/mpi/compare/compare.csv (bench,size,impl,value,unit);
#    each run's own CSV and stderr are kept beside it.
#
# Nothing is pinned (2 ranks on a 2-core machine share it with whatever
# else runs). --quick: 3 repetitions of ~30 ms per point, match at depths
# 1, 100, 10000 (about a minute of runs, 35-80 s on a loaded machine;
# much of it MPICH's reverse-order matching at depth 10000, up to 1.5 s
# per batch of receives); default: 7 of ~150 ms, match at depths 1, 10,
# 100, 1000, 10000 (about 5 minutes of runs). --rounds K runs
# every implementation K times, taking turns, and reports the median over
# the rounds of each run's value: on a small shared machine the spread
# between runs is larger than within one (a full run with K = 3 takes
# about 15 minutes). Each run is killed after 10 minutes (3 with --quick).
# Ratios
# are quay / other: below 1 is better for times (us), above 1 for rates
# (MB/s, msg/s). --stat min compares the best repetitions instead of the
# medians. The environment passes through to the ranks, e.g.
# QUAY_SPIN=1000000 bench/compare.sh (quay's waits spin longer before
# they block; quay_rt.h lists the knobs).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NRANKS=2
QUICK=()
STAT=median
ROUNDS=1
BUILD=""

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case "$1" in
    -n | --np)
        [ $# -ge 2 ] || { echo "compare.sh: $1 needs a value" >&2; exit 2; }
        NRANKS=$2
        shift 2
        ;;
    -n*) NRANKS=${1#-n}; shift ;;
    --quick) QUICK=(--quick); shift ;;
    --rounds)
        [ $# -ge 2 ] || { echo "compare.sh: --rounds needs a value" >&2; exit 2; }
        ROUNDS=$2
        shift 2
        ;;
    --stat)
        [ $# -ge 2 ] || { echo "compare.sh: --stat needs a value" >&2; exit 2; }
        STAT=$2
        shift 2
        ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "compare.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *)
        [ -z "$BUILD" ] || { echo "compare.sh: one build directory only" >&2; exit 2; }
        BUILD=$1
        shift
        ;;
    esac
done
case "$NRANKS" in
'' | *[!0-9]*) echo "compare.sh: -n $NRANKS: expected a number of ranks" >&2; exit 2 ;;
esac
[ "$NRANKS" -ge 2 ] || { echo "compare.sh: -n must be at least 2" >&2; exit 2; }
case "$ROUNDS" in
'' | *[!0-9]* | 0) echo "compare.sh: --rounds $ROUNDS: expected 1 or more" >&2; exit 2 ;;
esac
case "$STAT" in
median | min) ;;
*) echo "compare.sh: --stat $STAT: expected median or min" >&2; exit 2 ;;
esac
BUILD=${BUILD:-$ROOT/build-bench}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
OUT=$BUILD/bench/mpi/compare
QB_ARGS=(--csv --stat "$STAT" ${QUICK[@]+"${QUICK[@]}"})

step() { printf '\n=== %s\n' "$*"; }

# ---- 1. quay -------------------------------------------------------------------
step "building quay's bench targets in $BUILD"
cfg=(-DCMAKE_BUILD_TYPE=Release -DQUAY_BENCH=ON)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cfg+=(-DBUILD_TESTING=OFF)
    if command -v ninja >/dev/null 2>&1; then
        cfg+=(-G Ninja)
    fi
fi
cmake -S "$ROOT" -B "$BUILD" "${cfg[@]}" >"$BUILD/compare-configure.log" 2>&1 || {
    tail -20 "$BUILD/compare-configure.log" >&2
    echo "compare.sh: cmake configure failed (log: $BUILD/compare-configure.log)" >&2
    exit 1
}
cmake --build "$BUILD" --target qbench_quay raw_tcp quayrun -j "$(nproc 2>/dev/null || echo 2)" \
    >"$BUILD/compare-build.log" 2>&1 || {
    tail -30 "$BUILD/compare-build.log" >&2
    echo "compare.sh: build failed (log: $BUILD/compare-build.log; qbench_quay needs" \
        "quay_rt, i.e. Linux)" >&2
    exit 1
}
QUAYRUN=$BUILD/tools/quayrun
QB_QUAY=$BUILD/bench/mpi/qbench_quay
RAW_TCP=$BUILD/bench/mpi/raw_tcp
echo "ok: $QB_QUAY"

rm -rf "$OUT"
mkdir -p "$OUT"

# ---- 2. MPICH ------------------------------------------------------------------
QB_MPICH=$BUILD/bench/mpi/qbench_mpich
HAVE_MPICH=0
step "building qbench with mpicc (MPICH)"
if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpiexec >/dev/null 2>&1; then
    echo "MPICH: not available (no mpicc / mpiexec on PATH; Debian: apt-get install mpich);" \
        "the MPICH column stays empty"
elif ! mpicc -show 2>/dev/null | grep -qi mpich && ! mpichversion >/dev/null 2>&1; then
    echo "MPICH: mpicc is not MPICH's ($(mpicc -show 2>&1 | head -1)); skipped"
elif mpicc -O2 -Wall -Wextra -o "$QB_MPICH" "$ROOT/bench/mpi/qbench.c" \
    >"$OUT/mpicc.log" 2>&1; then
    HAVE_MPICH=1
    echo "ok: $QB_MPICH ($(mpichversion 2>/dev/null |
        sed -n 's/^MPICH Version:[[:space:]]*/MPICH /p;s/^MPICH Device:[[:space:]]*/device /p' |
        paste -sd' ' -))"
else
    cat "$OUT/mpicc.log" >&2
    echo "MPICH: mpicc failed; skipped"
fi

# A run that takes longer than this has hung: it is killed and reported.
if [ ${#QUICK[@]} -gt 0 ]; then LIMIT_S=180; else LIMIT_S=600; fi
TIMEOUT=()
if command -v timeout >/dev/null 2>&1; then
    TIMEOUT=(timeout -k 10 "$LIMIT_S")
fi

# run NAME command...: CSV to $OUT/NAME.csv, stderr to $OUT/NAME.err.
# Returns the command's status; a failure is reported, not fatal.
run() {
    local name=$1 t0 rc=0
    shift
    step "$name: $*"
    t0=$(date +%s)
    ${TIMEOUT[@]+"${TIMEOUT[@]}"} "$@" >"$OUT/$name.csv" 2>"$OUT/$name.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        tail -15 "$OUT/$name.err" >&2
        [ "$rc" -ne 124 ] || echo "$name: killed after $LIMIT_S s"
        echo "$name: FAILED (status $rc; stderr in $OUT/$name.err)"
        mv "$OUT/$name.csv" "$OUT/$name.failed.csv"
        return "$rc"
    fi
    grep '^#' "$OUT/$name.csv" | grep -v '^# done$' | sed 's/^# /  /' || true
    if ! grep -q '^# done$' "$OUT/$name.csv"; then
        echo "$name: WARNING: status 0 but the output is incomplete" \
            "($(grep -c '^[a-z]' "$OUT/$name.csv") lines): was it killed from outside?"
        return 1
    fi
    echo "  done in $(($(date +%s) - t0)) s"
}

# ---- 3. runs -------------------------------------------------------------------
step "tcp: probing quayrun --transport tcp"
HAVE_TCP=0
probe_rc=0
probe=$("$QUAYRUN" -n 2 --transport tcp true 2>&1) || probe_rc=$?
if [ "$probe_rc" -eq 0 ]; then
    HAVE_TCP=1
    echo "tcp: available"
elif printf '%s' "$probe" | grep -qi 'not built'; then
    echo "tcp: not available ($(printf '%s' "$probe" | head -1))"
else
    echo "tcp: not available: quayrun --transport tcp failed (status $probe_rc):"
    printf '%s\n' "$probe" | head -5
fi

# Each round runs every implementation once, in turn, so that a slow
# drift of the machine's load touches all of them alike.
for ((round = 1; round <= ROUNDS; round++)); do
    [ "$ROUNDS" -eq 1 ] || step "round $round of $ROUNDS"
    if [ "$HAVE_MPICH" = 1 ]; then
        # Hydra on one host: the fork launcher (no ssh), no binding. Works
        # as root (Hydra does not refuse it).
        run "mpich.r$round" mpiexec -launcher fork -bind-to none -n "$NRANKS" "$QB_MPICH" \
            "${QB_ARGS[@]}" || true
    fi
    run "quay_shm.r$round" "$QUAYRUN" -n "$NRANKS" "$QB_QUAY" "${QB_ARGS[@]}" || true
    if [ "$HAVE_TCP" = 1 ]; then
        run "quay_tcp.r$round" "$QUAYRUN" -n "$NRANKS" --transport tcp "$QB_QUAY" \
            "${QB_ARGS[@]}" || true
        run "raw_tcp.r$round" "$RAW_TCP" "${QB_ARGS[@]}" || true
    fi
done

# One value per (bench, size) and implementation: the median over the
# rounds that produced it.
for impl in mpich quay_shm quay_tcp raw_tcp; do
    files=()
    for ((round = 1; round <= ROUNDS; round++)); do
        f=$OUT/$impl.r$round.csv
        [ -f "$f" ] && files+=("$f")
    done
    [ ${#files[@]} -gt 0 ] || continue
    awk -F, 'NF == 4 && $1 !~ /^#/ && $1 != "bench" {
        k = $1 "," $2
        if (!(k in n)) { order[++nk] = k; unit[k] = $4 }
        v[k, ++n[k]] = $3
    }
    END {
        for (i = 1; i <= nk; i++) {
            k = order[i]; m = n[k]
            for (a = 1; a <= m; a++) x[a] = v[k, a] + 0
            for (a = 2; a <= m; a++)      # insertion sort: a few rounds
                for (b = a; b > 1 && x[b - 1] > x[b]; b--) { t = x[b]; x[b] = x[b - 1]; x[b - 1] = t }
            med = m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
            printf "%s,%.6g,%s\n", k, med, unit[k]
        }
    }' "${files[@]}" >"$OUT/$impl.csv"
done

# ---- 4. tables -----------------------------------------------------------------
COMBINED=$OUT/compare.csv
echo "bench,size,impl,value,unit" >"$COMBINED"
for impl in mpich quay_shm quay_tcp raw_tcp; do
    [ -f "$OUT/$impl.csv" ] || continue
    awk -F, -v impl="$impl" 'NF == 4 && $1 !~ /^#/ && $1 != "bench" {
        print $1 "," $2 "," impl "," $3 "," $4 }' "$OUT/$impl.csv" >>"$COMBINED"
done

step "results: $NRANKS ranks, $(if [ ${#QUICK[@]} -gt 0 ]; then echo quick; else echo full; fi) run, value = $STAT of the repetitions$([ "$ROUNDS" -eq 1 ] || echo ", median of $ROUNDS rounds"), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
awk -F, -v have_tcp="$HAVE_TCP" -v have_mpich="$HAVE_MPICH" '
NR == 1 { next }
{
    key = $1 SUBSEP $2
    if (!(key in seen)) {
        seen[key] = 1
        if (!($1 in nb)) { order[++nbench] = $1; nb[$1] = 0 }
        sizes[$1, ++nb[$1]] = $2
    }
    val[$1, $2, $3] = $4
    unit[$1] = $5
}
function human(s) {
    if (depth) return s
    if (s >= 1048576 && s % 1048576 == 0) return (s / 1048576) "M"
    if (s >= 1024 && s % 1024 == 0) return (s / 1024) "K"
    return s
}
function fmt(v, u) {
    if (v == "") return "-"
    if (u == "us") return sprintf("%.3f", v)
    if (u == "msg/s") return sprintf("%.0f", v)
    return sprintf("%.1f", v)
}
function ratio(a, b) {
    if (a == "" || b == "" || b + 0 == 0) return "-"
    return sprintf("%.2f", a / b)
}
END {
    for (i = 1; i <= nbench; i++) {
        b = order[i]; u = unit[b]
        better = (u == "us") ? "lower is better; ratio < 1: quay faster" \
                             : "higher is better; ratio > 1: quay faster"
        depth = b ~ /^match_/ # sizes are queue depths
        printf "\n## %s [%s%s] (%s)\n", b, u, depth ? " per receive" : "", better
        printf "%8s %12s %12s %10s", depth ? "depth" : "size", "MPICH", "quay shm", "shm/MPICH"
        if (have_tcp) printf " %12s %12s %8s", "quay tcp", "raw tcp", "tcp/raw"
        printf "\n"
        for (j = 1; j <= nb[b]; j++) {
            s = sizes[b, j]
            m = val[b, s, "mpich"]; q = val[b, s, "quay_shm"]
            printf "%8s %12s %12s %10s", human(s), fmt(m, u), fmt(q, u), ratio(q, m)
            if (have_tcp) {
                t = val[b, s, "quay_tcp"]; r = val[b, s, "raw_tcp"]
                printf " %12s %12s %8s", fmt(t, u), fmt(r, u), ratio(t, r)
            }
            printf "\n"
        }
    }
    depth = 0
    match_summary()
    # The issue'"'"'s targets (2 ranks).
    printf "\n## targets (quay shm vs MPICH%s)\n", have_tcp ? "; quay tcp vs raw loopback" : ""
    tgt("latency", 8, "mpich", "<=", 0.8, "8 B latency")
    tgt("bw", 4194304, "mpich", ">=", 1.3, "4 MiB bandwidth")
    tgt("barrier", 0, "mpich", "<=", 1.0, "barrier")
    tgt("allreduce", 8, "mpich", "<=", 1.0, "8 B allreduce")
    printf "  (small-message ratios swing with the machine'"'"'s speed mode on a small VM;\n"
    printf "   bench/modes.sh takes them apart: RESULTS.md 8g)\n"
    if (have_tcp) tgt2("bw", 4194304, ">=", 0.9, "tcp 4 MiB bandwidth vs raw")
    # Matching: quay'"'"'s cost per receive must not grow with the depth
    # (MPICH'"'"'s does, linearly). At the deepest point measured (1000 or
    # more): t_u = 2 (rev - in) / (D - 1), what one failed compare would
    # cost if the difference came from walking a queue, at most 1 ns. No
    # list walk compares an entry in less (MPICH: 10-30 ns), and at depth
    # 10000 it takes 5 us of difference per receive to reach it, far more
    # than cache effects or noise (this script'"'"'s criterion; the issue
    # sets no number).
    for (q = 0; q < 2; q++) {
        kind = q ? "unexp" : "posted"
        d = deepest("match_" kind "_rev")
        if (d == "" || d < 1000) continue
        r = tu(kind, d, "quay_shm")
        printf "  %-28s quay t_u    = %5s ns (target <= 1.00; rev/in %s; MPICH t_u %s)  %s\n", \
            "matching flat, " kind " " d, r,
            ratio(val["match_" kind "_rev", d, "quay_shm"], val["match_" kind "_in", d, "quay_shm"]),
            tu(kind, d, "mpich"), verdict(r, "<=", 1)
    }
}
# t_u in ns at depth d for impl, or "-".
function tu(kind, d, impl,    rv, iv) {
    rv = val["match_" kind "_rev", d, impl]; iv = val["match_" kind "_in", d, impl]
    if (rv == "" || iv == "" || d + 0 < 2) return "-"
    return sprintf("%.2f", 2000 * (rv - iv) / (d - 1))
}
function verdict(r, op, lim) {
    if (r == "-") return "n/a"
    return ((op == "<=" && r + 0 <= lim) || (op == ">=" && r + 0 >= lim)) ? "MET" : "MISSED"
}
function tgt(b, s, other, op, lim, what,    r) {
    r = ratio(val[b, s, "quay_shm"], val[b, s, other])
    printf "  %-28s quay/MPICH = %5s  (target %s %.2f)  %s\n", what, r, op, lim, verdict(r, op, lim)
}
function tgt2(b, s, op, lim, what,    r) {
    r = ratio(val[b, s, "quay_tcp"], val[b, s, "raw_tcp"])
    printf "  %-28s quay/raw   = %5s  (target %s %.2f)  %s\n", what, r, op, lim, verdict(r, op, lim)
}
# Largest size of bench b.
function deepest(b,    j, s, best) {
    best = ""
    for (j = 1; j <= nb[b]; j++) {
        s = sizes[b, j] + 0
        if (best == "" || s > best) best = s
    }
    return best
}
# The match rows side by side: reverse / in order per depth (1: flat; a
# linear queue grows with the depth), and t_u = 2 (rev - in) / (D - 1),
# the cost of one failed compare (McMPI'"'"'s formula), in ns.
function match_summary(    q, kind, impls, names, ni, k, j, d) {
    if (!(("match_posted_in") in nb) && !(("match_unexp_in") in nb)) return
    ni = split("mpich quay_shm" (have_tcp ? " quay_tcp" : ""), impls, " ")
    split("MPICH|quay shm|quay tcp", names, "|")
    printf "\n## match: reverse / in order per receive (1: flat; a linear queue grows with the\n"
    printf "## depth) and t_u = 2 (rev - in) / (depth - 1) in ns, the cost of one failed compare\n"
    printf "%-6s %6s", "queue", "depth"
    for (k = 1; k <= ni; k++) printf " %15s", names[k] " rev/in"
    for (k = 1; k <= ni; k++) printf " %13s", names[k] " t_u"
    printf "\n"
    for (q = 0; q < 2; q++) {
        kind = q ? "unexp" : "posted"
        for (j = 1; j <= nb["match_" kind "_in"]; j++) {
            d = sizes["match_" kind "_in", j]
            printf "%-6s %6s", kind, d
            for (k = 1; k <= ni; k++)
                printf " %15s", ratio(val["match_" kind "_rev", d, impls[k]], val["match_" kind "_in", d, impls[k]])
            for (k = 1; k <= ni; k++)
                printf " %13s", tu(kind, d, impls[k])
            printf "\n"
        }
    }
}
' "$COMBINED"

echo
echo "combined CSV: $COMBINED"
echo "per run: $OUT/{mpich,quay_shm,quay_tcp,raw_tcp}.rN.csv and .rN.err (round N)"
