#!/bin/sh
# expect_refused.sh REGEX PROG [ARGS...] — PROG must fail (exit 1..127,
# not a signal) and say something matching REGEX (grep -E) on stderr or
# stdout: the runtime refused its transport cleanly.
regex=$1
shift
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
echo "expect_refused: exit status $status"
[ "$status" -ge 1 ] && [ "$status" -le 127 ] && printf '%s\n' "$out" | grep -Eq -- "$regex"
