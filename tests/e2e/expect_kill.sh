#!/bin/sh
# expect_kill.sh QUAYRUN PROG N [TRANSPORT] — run e2e_kill on N ranks.
# quayrun must report the last rank killed by SIGKILL and exit 137, and
# every other rank must say that it survived (and so exited 0 after
# finalize).
quayrun=$1 prog=$2 n=$3 transport=${4:-shm}
out=$("$quayrun" -n "$n" --transport "$transport" "$prog" 2>&1)
status=$?
printf '%s\n' "$out"
survived=$(printf '%s\n' "$out" | grep -c ' survived$')
reported=$(printf '%s\n' "$out" | grep -c "quayrun: rank $((n - 1)) killed by signal 9")
echo "expect_kill: quayrun exit status $status; $survived of $((n - 1)) ranks survived"
[ "$status" -eq 137 ] && [ "$survived" -eq $((n - 1)) ] && [ "$reported" -eq 1 ]
