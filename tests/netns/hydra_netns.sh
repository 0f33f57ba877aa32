#!/bin/sh
# Multi-host test on one machine: Hydra's mpiexec runs a quay program over
# TCP across network namespaces, one "host" each, joined by veth links to
# a bridge in a namespace of its own (nothing changes in the root one).
#
#   hydra_netns.sh HOSTS RANKS prog [args...]
#
# mpiexec runs in the first namespace and starts its proxies through a
# fake ssh (nsh.sh beside this script), which enters the namespace named
# by the host: Hydra itself never knows. `-iface` makes it publish
# its control port on the veth address, which the other namespaces reach.
# Needs root, ip (iproute2) and mpiexec (Debian mpich); exits 77 (CTest:
# skipped) without them.
set -u

hosts=$1
ranks=$2
shift 2

skip() {
    echo "skipped: $*"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (ip netns)"
command -v ip >/dev/null 2>&1 || skip "needs ip (Debian iproute2)"
command -v mpiexec >/dev/null 2>&1 || skip "needs mpiexec (Debian mpich)"

nsh=$(dirname "$(readlink -f "$0")")/nsh.sh
tag=q$$
sw=$tag-sw
names=""
cleanup() {
    for h in $names; do ip netns del "$h" 2>/dev/null; done
    ip netns del "$sw" 2>/dev/null
}
trap cleanup EXIT INT TERM

ip netns add "$sw" 2>/dev/null || skip "cannot create network namespaces here"
ip netns exec "$sw" ip link add br0 type bridge || exit 1
ip netns exec "$sw" ip link set br0 up || exit 1
i=1
while [ "$i" -le "$hosts" ]; do
    h=$tag-h$i
    ip netns add "$h" || exit 1
    names="$names $h"
    # Link names are at most 15 characters: q<pid>e<i> / q<pid>p<i>.
    ip link add "${tag}e$i" type veth peer name "${tag}p$i" || exit 1
    ip link set "${tag}e$i" netns "$h" || exit 1
    ip link set "${tag}p$i" netns "$sw" || exit 1
    ip netns exec "$sw" ip link set "${tag}p$i" master br0 || exit 1
    ip netns exec "$sw" ip link set "${tag}p$i" up || exit 1
    ip netns exec "$h" ip link set lo up || exit 1
    ip netns exec "$h" ip addr add "10.77.0.$i/24" dev "${tag}e$i" || exit 1
    ip netns exec "$h" ip link set "${tag}e$i" up || exit 1
    i=$((i + 1))
done

first=$tag-h1
hostlist=$(echo $names | tr ' ' ',')
echo "hosts: $hostlist (10.77.0.1..$hosts), $ranks ranks: $*"
# timeout: a hang fails the test (CTest's own timeout would leave the
# namespaces behind).
ip netns exec "$first" timeout 120 mpiexec -launcher ssh -launcher-exec "$nsh" \
    -iface "${tag}e1" -hosts "$hostlist" -n "$ranks" "$@"
rc=$?
echo "mpiexec exit status $rc"
exit $rc
