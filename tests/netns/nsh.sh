#!/bin/sh
# A fake ssh for Hydra (hydra_netns.sh): "nsh.sh [ssh options] host
# command" runs the command in the network namespace named `host`.
while [ $# -gt 0 ]; do
    case "$1" in
    -x | -q | -T | -n | -4) shift ;;
    -o | -p | -l) shift 2 ;;
    *) break ;;
    esac
done
host=$1
shift
exec ip netns exec "$host" sh -c "$*"
