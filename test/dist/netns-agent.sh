#!/bin/sh
# netns-agent.sh HOST COMMAND...: Open MPI's rsh launcher agent
# (plm_rsh_agent) for test/dist/netns.py (multihost.py, bench/dp_tcp.sh),
# which stands for machines with network namespaces. mpirun calls it as
# it would call ssh, with the host and the daemon's command line; a host
# that $RAF_NETNS_MAP (lines "ADDRESS NAMESPACE") lists runs the command
# in that namespace, as ssh would run it in the host's shell. Any other
# host goes to ssh, as without the agent, so that an unknown or
# unreachable host fails as it would for a user.
host=$1
shift
ns=$(awk -v h="$host" '$1 == h { print $2 }' "${RAF_NETNS_MAP:-/dev/null}")
if [ -n "$ns" ]; then
  exec ip netns exec "$ns" sh -c "$*"
fi
if command -v ssh > /dev/null; then
  exec ssh -o BatchMode=yes -o ConnectTimeout=5 "$host" "$@"
fi
echo "netns-agent.sh: $host: no such namespace, and no ssh to reach it" >&2
exit 255
