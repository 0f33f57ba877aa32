#!/usr/bin/env bash
# bench/mode_report.sh — the report of a two-implementation run on a
# machine with speed modes (bench/modes.sh, bench/osu.sh).
#
#   bench/mode_report.sh [--skip 'BENCH SIZE'] [--higher REGEX] [--names A,B] CSV
#
# CSV has a header line, then round,impl,bench,size,value with impl
# "mpich" or "quay" (--names: the base A and the other B, e.g. off,on;
# the ratios are then B / A). Per benchmark and size: every value of each
# implementation sorted and split into two modes at its largest jump when
# it is at least 1.35x (else one mode), the median per mode and the ratio
# quay / MPICH ("mixed" when one of them showed no split: all values
# against all); then the rounds paired, quay's value over MPICH's of the
# same round (a few seconds apart, so mostly in the same mode): median and
# quartiles. A ratio is of the benchmark's own unit: below 1 is quay ahead
# for a time, above 1 for a rate. Benchmarks whose name matches --higher
# (an awk ERE) are rates: their higher values are the fast mode.
set -euo pipefail
SKIP=""
HIGHER='^$'
NAMES=mpich,quay
while [ $# -gt 1 ]; do
    case $1 in
    --skip) SKIP=$2; shift 2 ;;
    --higher) HIGHER=$2; shift 2 ;;
    --names) NAMES=$2; shift 2 ;;
    *) break ;;
    esac
done
CSV=${1:?usage: mode_report.sh [--skip 'BENCH SIZE'] [--higher REGEX] [--names A,B] CSV}
A=${NAMES%%,*}
B=${NAMES#*,}
[ -n "$A" ] && [ -n "$B" ] && [ "$A" != "$NAMES" ] ||
    { echo "mode_report.sh: --names wants two names, A,B" >&2; exit 2; }
if [ "$NAMES" = mpich,quay ]; then
    HA=MPICH HB=quay HR=q/MPICH
else
    HA=$A HB=$B HR=$B/$A
fi
printf "%-22s %-5s %13s %13s %8s\n" bench mode "$HA" "$HB" "$HR"
awk -F, -v skip="$SKIP" -v higher="$HIGHER" -v A="$A" -v B="$B" 'NR > 1 && ($3 " " $4) != skip { k = $3 " " $4; v[k "," $2] = v[k "," $2] " " $5; keys[k] = 1 }
# Sort s; lo gets the values up to the largest jump (>= 1.35x), hi the
# rest (empty when there is no such jump). Returns 1 when split.
function split_modes(s, lo, hi,    a, n, i, j, t, best, cut) {
    delete lo; delete hi
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    best = 1.35; cut = n
    for (i = 1; i < n; i++) if (a[i] > 0 && a[i + 1] / a[i] >= best) { best = a[i + 1] / a[i]; cut = i }
    lo[0] = 0; hi[0] = 0
    for (i = 1; i <= n; i++) if (i <= cut) lo[++lo[0]] = a[i]; else hi[++hi[0]] = a[i]
    return cut < n
}
function all_vals(s, x,    a, n, i, j, t) {
    delete x
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    x[0] = n
    for (i = 1; i <= n; i++) x[i] = a[i]
}
function med(x,    n) { n = x[0]; if (n == 0) return -1; return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
function row(k, mode, m, q,    a, b) {
    a = med(m); b = med(q)
    printf "%-22s %-5s %8.3f (%2d) %8.3f (%2d) %8s\n", k, mode, a, m[0], b, q[0], (a > 0 && b > 0) ? sprintf("%.2f", b / a) : "-"
}
END {
    for (k in keys) {
        sm = split_modes(v[k "," A], ml, mh); sq = split_modes(v[k "," B], ql, qh)
        if (sm && sq) {
            split(k, kb, " ")
            if (kb[1] ~ higher) { row(k, "slow", ml, ql); row(k, "fast", mh, qh) }
            else { row(k, "fast", ml, ql); row(k, "slow", mh, qh) }
        } else {
            # One of them stayed in one mode: no pairing by mode, only
            # all values against all.
            all_vals(v[k "," A], ml); all_vals(v[k "," B], ql)
            row(k, "mixed", ml, ql)
        }
    }
}' "$CSV" | sort -k1,1 -k2,2n
# The same rounds paired: quay's value over MPICH's of the same round
# (a second apart, so mostly the same mode), median and quartiles.
echo "## paired by round: $HB / $HA"
awk -F, -v skip="$SKIP" -v A="$A" -v B="$B" 'NR > 1 && ($3 " " $4) != skip { k = $3 " " $4; val[$1 "," k "," $2] = $5; keys[k] = 1; R[$1] = 1 }
END {
    for (k in keys) {
        n = 0
        for (r in R) {
            a = val[r "," k "," A]; b = val[r "," k "," B]
            if (a > 0 && b > 0) x[++n] = b / a
        }
        for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
        if (n > 0)
            printf "%-22s median %.2f  quartiles %.2f-%.2f  (%d rounds)\n", k,
                   n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2, x[int(n / 4) + 1], x[n - int(n / 4)], n
        delete x
    }
}' "$CSV" | sort -k1,1 -k2,2n
