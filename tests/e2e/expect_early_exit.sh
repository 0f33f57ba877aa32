#!/bin/sh
# expect_early_exit.sh QUAYRUN PROG N TRANSPORT exit|kill — run
# e2e_early_exit on N ranks: rank 1 ends before it starts the runtime.
# Every other rank must fail its start-up with "peer failed" and exit 3,
# and quayrun must exit with rank 1's status (7, or 137 when killed).
# The connect limit and the grace period are an hour: a rank that only
# gives up on a timer, or is killed by quayrun, hangs into CTest's timeout.
quayrun=$1 prog=$2 n=$3 transport=$4 how=$5
want=7
[ "$how" = kill ] && want=137
out=$(QUAY_TCP_CONNECT_MS=3600000 "$quayrun" -n "$n" --transport "$transport" --grace 3600 \
    "$prog" "$how" 2>&1)
status=$?
printf '%s\n' "$out"
failed=$(printf '%s\n' "$out" | grep -c '^rank [0-9]*: start-up failed: peer failed$')
exited=$(printf '%s\n' "$out" | grep '^quayrun: rank [0-9]* exited with status 3$' |
    grep -vc '^quayrun: rank 1 ')
# Neither the connect limit nor the grace timer may have ended anything.
timers=$(printf '%s\n' "$out" | grep -c -e 'QUAY_TCP_CONNECT_MS' -e '^quayrun: killing')
echo "expect_early_exit: quayrun exit status $status (want $want);" \
     "$failed and $exited of $((n - 1)) ranks failed start-up"
[ "$status" -eq "$want" ] && [ "$failed" -eq $((n - 1)) ] && [ "$exited" -eq $((n - 1)) ] &&
    [ "$timers" -eq 0 ]
