#!/usr/bin/env bash
# bench/callgrind.sh — instruction counts (callgrind Ir) for the engine's
# eager path and for the matcher, so the lead can see where instructions go
# without the noise of wall-clock time.
#
#   bench/callgrind.sh                 # engine + matcher
#   bench/callgrind.sh engine          # only bench_engine
#   bench/callgrind.sh match           # only bench_match
#
# Environment: BUILD (default build-bench; configured here if it has no
# benches yet), ITERS (eager messages bracketed, default 10000), OUT
# (callgrind.out files and logs, default $BUILD/callgrind), TOP (15).
#
# Engine: bench_engine --callgrind brackets exactly ITERS eager 8-byte
# messages (irecv pre-posted + isend + next_action on both ends + on_packet
# + on_op_done + test + free on both ends). It runs with the wire's
# payload copy, with --no-copy, with --send inline, and with --send inline
# --recv persistent. From callgrind_annotate's flat profile:
#   total    every instruction in the bracket (engine + bench wire/pump)
#   memcpy   memcpy/memmove (libc): the engine's payload copy into the
#            receive buffer and the bench wire's header/payload copies
#   harness  self Ir of bench/*.c functions (the wire and pump loop)
#   engine   everything else (src/ functions, libc other than memcpy)
# and prints (total - memcpy) / ITERS as the end-to-end figure (design.md §10:
# <= 300), plus engine-only and the top functions (self Ir of inlined
# pieces merged into the function they were inlined into). A third run
# sends by quay_send_inline (--send inline): the payload copied into the
# packet at the call, no send request, and the wire hands the one-iovec
# packet over without copying it; a fourth also receives with a persistent
# request (--recv persistent: quay_start per message, the stream's window
# by one quay_startall; no allocation or free); send-copy sends by quay_isend on engines with QUAY_CFG_SEND_COPY
# (the request complete at the call, as the MPI binding runs). The stream
# variants send rounds of 64 (--mode stream); stream-late and
# stream-recv-inline let the round's messages arrive before their receives
# (kept as unexpected messages) and receive them by quay_irecv or by
# quay_recv_inline (--recv late / inline); the nicsim ones carry the
# packets through the simulator (its instructions count as wire): one
# message at a time by quay_isend, and stream-lean's calls.
#
# Matcher: bench_match --callgrind, exact keys and 10 % ANY_SOURCE, posted
# and unexpected queues, depth 1 and 10000 (fast matcher), and the linear
# matcher for contrast. "matcher" is the self Ir of match.c/match_oracle.c
# functions (match_*, oracle_*, with their inlined helpers).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
ITERS=${ITERS:-10000}
OUT=${OUT:-$BUILD/callgrind}
TOP=${TOP:-15}
WHAT=${1:-all}

case $WHAT in all | engine | match) ;; *)
    echo "usage: $0 [all|engine|match]" >&2
    exit 2
    ;;
esac
for tool in valgrind callgrind_annotate cmake awk; do
    command -v "$tool" >/dev/null || { echo "callgrind.sh: $tool not found" >&2; exit 1; }
done

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    # CMake's Release means -O3; the numbers are for -O2 (-g only names lines).
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        "-DCMAKE_C_FLAGS_RELEASE=-O2 -g -DNDEBUG" -DQUAY_BENCH=ON -DBUILD_TESTING=OFF
fi
cmake --build "$BUILD" --target bench_engine bench_match >/dev/null
if ! grep -q '^QUAY_HAVE_CALLGRIND_H:INTERNAL=1' "$BUILD/CMakeCache.txt"; then
    echo "callgrind.sh: <valgrind/callgrind.h> was not found at configure time;" \
        "the brackets are inactive and the counts cover the whole run" >&2
fi
mkdir -p "$OUT"
rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- src include 2>/dev/null || rev="$rev + uncommitted src/include changes"
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
bt=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
btu=$(tr '[:lower:]' '[:upper:]' <<<"$bt")
flags=$(sed -n "s/^CMAKE_C_FLAGS_$btu:[A-Z]*=//p" "$BUILD/CMakeCache.txt")
echo "quay $rev; $cc $("$cc" -dumpversion 2>/dev/null), $bt ($flags); $(valgrind --version)"
echo
ENGINE_BIN=$BUILD/bench/bench_engine
MATCH_BIN=$BUILD/bench/bench_match

# cg_run NAME CMD... — run CMD under callgrind; prints the message count.
cg_run() {
    local name=$1
    shift
    valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no \
        --callgrind-out-file="$OUT/$name.out" "$@" >"$OUT/$name.log" 2>&1 || {
        echo "callgrind.sh: $name failed, see $OUT/$name.log" >&2
        exit 1
    }
    sed -n 's/^callgrind_msgs=//p' "$OUT/$name.log"
}

# cg_flat FILE — "function class Ir" per function (self Ir, inlined pieces
# merged by function name), then "TOTAL - Ir".
cg_flat() {
    callgrind_annotate --auto=no --threshold=100 --show-percs=no "$1" | awk '
        /PROGRAM TOTALS/ { t = $1; gsub(/,/, "", t); total = t; next }
        /^Ir +file:function/ { body = 1; next }
        body && /^-+$/ { if (seen) exit; next }
        body && /^ *[0-9,]+ +[^ ]/ {
            seen = 1
            ir = $1; gsub(/,/, "", ir)
            line = $0
            sub(/^ *[0-9,]+ +/, "", line)
            sub(/ \[[^]]*\]$/, "", line)
            k = split(line, p, ":"); fn = p[k]
            file = substr(line, 1, length(line) - length(fn) - 1)
            if (fn ~ /mem(cpy|move)/) cls = "memcpy"
            else if (file ~ /(^|\/)(bench|adapters\/nicsim)\//) cls = "harness"
            else if (file ~ /(^|\/)src\//) cls = "engine"
            else cls = "other"
            self[fn] += ir
            if (!(fn in class) || cls != "other") class[fn] = cls
        }
        END {
            for (fn in self) print fn, class[fn], self[fn]
            print "TOTAL", "-", total
        }'
}

# summarize FLATFILE MSGS — key=value per-message figures.
summarize() {
    awk -v n="$2" '
        $1 == "TOTAL" { total = $3; next }
        { sum[$2] += $3
          if ($1 ~ /^(match_|oracle_|fast_|remove_at|pattern_|key_hash|mismatch)/) m += $3 }
        END {
            printf "total=%.1f memcpy=%.1f harness=%.1f engine=%.1f matcher=%.1f\n",
                total / n, sum["memcpy"] / n, sum["harness"] / n,
                (sum["engine"] + sum["other"]) / n, m / n
        }' "$1"
}

# top FLATFILE MSGS — the TOP functions by self Ir per message.
top() {
    awk -v n="$2" '$1 != "TOTAL" { printf "%10.1f  %-8s %s\n", $3 / n, $2, $1 }' "$1" |
        sort -rn | head -n "$TOP"
}

# entry_points FILE MSGS — public quay_* calls made by bench code: inclusive
# Ir per message, calls per message, Ir per call (from --tree=calling).
entry_points() {
    callgrind_annotate --auto=no --threshold=100 --show-percs=no --tree=calling "$1" | awk -v n="$2" '
        /^ *[0-9,]+ +\* +/ { line = $0; sub(/^ *[0-9,]+ +\* +/, "", line)
                             inbench = (line ~ /^([^ ]*\/)?bench\/[^ ]*:/); next }
        /^ *[0-9,]+ +> +/ && inbench {
            ir = $1; gsub(/,/, "", ir)
            line = $0; sub(/^ *[0-9,]+ +> +/, "", line)
            callee = line; sub(/ .*/, "", callee)
            k = split(callee, p, ":"); fn = p[k]
            if (fn !~ /^quay_/) next
            c = line; sub(/^[^(]*\(/, "", c); sub(/x\).*/, "", c); gsub(/,/, "", c)
            inc[fn] += ir; calls[fn] += c
        }
        END { for (fn in inc) printf "%10.1f  %5.1f  %8.1f  %s\n", inc[fn] / n, calls[fn] / n, inc[fn] / calls[fn], fn }' |
        sort -rn
}

get() { sed -n "s/.*\\b$1=\\([0-9.]*\\).*/\\1/p" <<<"$2"; }

if [ "$WHAT" != match ]; then
    echo "== engine: $ITERS eager 8-byte messages end to end ($ENGINE_BIN --callgrind)"
    summary=()
    for variant in copy no-copy inline lean send-copy stream stream-lean stream-copy stream-late \
        stream-recv-inline nicsim stream-lean-nicsim; do
        name=engine-$variant
        extra=()
        case $variant in
        copy) what="quay_isend, wire payload copy on" ;;
        no-copy) extra=(--no-copy)
            what="quay_isend, wire payload copy off (--no-copy)" ;;
        inline) extra=(--send inline)
            what="quay_send_inline (no send request; one-iovec packet handed over as it is)" ;;
        lean) extra=(--send inline --recv persistent)
            what="quay_send_inline + a persistent receive started by quay_start" ;;
        send-copy) extra=(--send copy)
            what="quay_isend on engines with QUAY_CFG_SEND_COPY (complete at the call) + quay_irecv" ;;
        stream-copy) extra=(--mode stream --window 64 --send copy)
            what="stream of 64, quay_isend with QUAY_CFG_SEND_COPY + quay_irecv (the MPI binding's way)" ;;
        stream) extra=(--mode stream --window 64)
            what="stream: rounds of 64 (64 irecv, 64 isend, one pump, test + free)" ;;
        stream-lean) extra=(--mode stream --window 64 --send inline --recv persistent)
            what="stream of 64, quay_send_inline + persistent receives (quay_startall per window)" ;;
        stream-late) extra=(--mode stream --window 64 --send inline --recv late)
            what="stream of 64, quay_send_inline, the messages arrive first, then quay_irecv (complete at the call) + test + free" ;;
        stream-recv-inline) extra=(--mode stream --window 64 --send inline --recv inline)
            what="stream of 64, quay_send_inline, the messages arrive first, then quay_recv_inline (no request)" ;;
        nicsim) extra=(--wire nicsim)
            what="quay_isend, packets carried by nicsim (FIFO, zero latency; the simulator counts as wire)" ;;
        stream-lean-nicsim) extra=(--mode stream --window 64 --send inline --recv persistent --wire nicsim)
            what="stream-lean's calls, packets carried by nicsim (the simulator counts as wire)" ;;
        esac
        msgs=$(cg_run "$name" "$ENGINE_BIN" --callgrind --iters "$ITERS" --size 8 "${extra[@]}")
        cg_flat "$OUT/$name.out" >"$OUT/$name.flat"
        s=$(summarize "$OUT/$name.flat" "$msgs")
        echo
        echo "-- $what, $msgs messages, $OUT/$name.out"
        printf '   per message: total %s, memcpy/memmove %s, wire (bench loop or nicsim) %s, engine %s\n' \
            "$(get total "$s")" "$(get memcpy "$s")" "$(get harness "$s")" "$(get engine "$s")"
        x=$(awk -v t="$(get total "$s")" -v m="$(get memcpy "$s")" 'BEGIN { printf "%.1f", t - m }')
        echo "instructions per eager message end to end (excluding payload memcpy): $x"
        echo "   of which engine (quay_* calls, libc memcpy excluded): $(get engine "$s");" \
            "wire: $(get harness "$s")"
        echo "   top $TOP functions, self Ir per message (class: engine/harness/memcpy/other):"
        top "$OUT/$name.flat" "$msgs" | sed 's/^/   /'
        echo "   public entry points called by the bench (inclusive, with any memcpy inside):"
        echo "     Ir/msg  calls/msg  Ir/call  function"
        entry_points "$OUT/$name.out" "$msgs" | sed 's/^/   /'
        summary+=("$variant $x $(get engine "$s") $(get harness "$s")")
    done
    echo
    echo "summary: instructions per eager message (target, design.md §10: <= 300 end to end)"
    printf '   %-18s %12s %8s %8s  %s\n' variant "end to end" engine wire "vs 300"
    for row in "${summary[@]}"; do
        read -r v x e h <<<"$row"
        awk -v v="$v" -v x="$x" -v e="$e" -v h="$h" 'BEGIN {
            printf "   %-18s %12.1f %8.1f %8.1f  %s %.2fx\n", v, x, e, h, (x <= 300 ? "MET" : "MISSED"), x / 300 }'
    done
    echo
fi

if [ "$WHAT" != engine ]; then
    echo "== matcher: instructions per matched message vs queue depth ($MATCH_BIN --callgrind)"
    echo "   per message = rank 1's irecv + on_packet + test + free (+ bench loop);"
    echo "   matcher = self Ir of match_*/oracle_* (+ inlined helpers)"
    printf '%-7s %5s %-7s %6s %8s %9s %9s %9s %11s\n' exp wild matcher depth msgs \
        "total/msg" "engine/msg" "match/msg" "match/d1"
    declare -A base
    for cfg in "posted 0 fast" "unexp 0 fast" "posted 10 fast" "unexp 10 fast" \
        "posted 0 linear" "unexp 0 linear"; do
        read -r exp wild matcher <<<"$cfg"
        for depth in 1 1000 10000; do
            [ "$matcher" = fast ] && [ "$depth" = 1000 ] && continue
            msgs_opt=()
            [ "$matcher" = linear ] && msgs_opt=(--msgs 10000)
            name=match-$exp-w$wild-$matcher-d$depth
            msgs=$(cg_run "$name" "$MATCH_BIN" --callgrind --exp "$exp" --depth "$depth" \
                --wild "$wild" --matcher "$matcher" "${msgs_opt[@]}")
            cg_flat "$OUT/$name.out" >"$OUT/$name.flat"
            s=$(summarize "$OUT/$name.flat" "$msgs")
            key="$exp-$wild-$matcher"
            m=$(get matcher "$s")
            [ "$depth" = 1 ] && base[$key]=$m
            # (0 at depth 1: the matcher ran inlined into the receive
            # calls, whose own rows say what it cost; no ratio then)
            ratio=$(awk -v a="$m" -v b="${base[$key]}" \
                'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "n/a" }')
            printf '%-7s %4s%% %-7s %6s %8s %9s %9s %9s %11s\n' "$exp" "$wild" "$matcher" \
                "$depth" "$msgs" "$(get total "$s")" "$(get engine "$s")" "$m" "$ratio"
        done
    done
    echo
    echo "-- top $TOP functions, posted queue, exact keys, fast matcher, depth 10000:"
    top "$OUT/match-posted-w0-fast-d10000.flat" \
        "$(sed -n 's/^callgrind_msgs=//p' "$OUT/match-posted-w0-fast-d10000.log")" | sed 's/^/   /'
    for exp in posted unexp; do
        d1=$(summarize "$OUT/match-$exp-w0-fast-d1.flat" \
            "$(sed -n 's/^callgrind_msgs=//p' "$OUT/match-$exp-w0-fast-d1.log")")
        d4=$(summarize "$OUT/match-$exp-w0-fast-d10000.flat" \
            "$(sed -n 's/^callgrind_msgs=//p' "$OUT/match-$exp-w0-fast-d10000.log")")
        awk -v q="$exp" -v m1="$(get matcher "$d1")" -v m4="$(get matcher "$d4")" \
            -v e1="$(get engine "$d1")" -v e4="$(get engine "$d4")" 'BEGIN {
            # matcher 0 at depth 1: inlined into the receive calls (the
            # whole path is the measure then)
            r = m1 > 0 ? m4 / m1 : 1
            how = m1 > 0 ? sprintf("matcher %.2fx", r) : "matcher inlined into the receive calls"
            printf "target (design.md §10), %s queue, exact keys: depth 10000 within 1.2x of depth 1: %s (%s, whole receive path %.2fx)\n",
                q, (r <= 1.2 && e4 / e1 <= 1.2 ? "MET" : "MISSED"), how, e4 / e1 }'
    done
fi
