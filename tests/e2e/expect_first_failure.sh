#!/bin/sh
# expect_first_failure.sh QUAYRUN — quayrun must report the rank that
# failed first, not the first one it forked. Rank 1 exits 3, then rank 0
# exits 5; quayrun is stopped meanwhile, so that both are waiting to be
# reaped when it looks. It must exit 3 and report rank 1 first.
#
# The order is made by hand-shakes, not by sleeping: each rank blocks
# opening its fifo until we open the other end, and exits when we close
# it; /proc says when a rank is a zombie.
quayrun=$1
dir=$(mktemp -d) || exit 1
qr=
cleanup() {
    [ -n "$qr" ] && kill -CONT "$qr" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
mkfifo "$dir/go0" "$dir/go1" || exit 1

"$quayrun" -n 2 --grace 3600 sh -c \
    'echo $$ > "$1/pid$QUAY_RANK.tmp" && mv "$1/pid$QUAY_RANK.tmp" "$1/pid$QUAY_RANK" &&
     read x < "$1/go$QUAY_RANK"; exit $((QUAY_RANK == 1 ? 3 : 5))' sh "$dir" 2> "$dir/err" &
qr=$!

# Returns once rank r has its fifo open for reading (so has written its pid).
exec 3> "$dir/go1" 4> "$dir/go0"
pid1=$(cat "$dir/pid1") pid0=$(cat "$dir/pid0")

zombie() {
    while [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; do
        sleep 0.05
    done
}

kill -STOP "$qr"
exec 3>&-          # rank 1 exits 3 ...
zombie "$pid1"
exec 4>&-          # ... then rank 0 exits 5
zombie "$pid0"
kill -CONT "$qr"
wait "$qr"
status=$?
qr=
cat "$dir/err"
first=$(grep '^quayrun: rank' "$dir/err" | head -n 1)
echo "expect_first_failure: quayrun exit status $status (want 3); first report: $first"
[ "$status" -eq 3 ] && [ "$first" = "quayrun: rank 1 exited with status 3" ]
