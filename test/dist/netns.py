#!/usr/bin/env python3
"""netns.py: two "hosts" on this machine for Open MPI over TCP, as network
namespaces on a bridge; used by test/dist/multihost.py and bench/dp_tcp.sh.

Run ID with name prefix P makes namespaces P<ID>a and P<ID>b, each with
loopback and one veth (eth0; its root-side end named as the namespace) on
the bridge P b<ID> in the root namespace, at SUBNET.2 and SUBNET.3; the
bridge holds SUBNET.1. mpirun runs in the root namespace with the
addresses as host names and mpirun_args(SUBNET): Open MPI's rsh launcher
with netns-agent.sh as its agent (it starts a host's daemon in its
namespace, looked up in the file $RAF_NETNS_MAP), the ranks on TCP only
(btl tcp,self) on the subnet, mpirun's daemons too (oob_tcp_if_include),
and TCP keepalives of a few seconds so that a daemon whose host is gone is
noticed. ENV holds the environment the launch needs besides RAF_NETNS_MAP.

As a command, for scripts:
  netns.py up P ID SUBNET MAP    removes the leftovers of P's runs whose
                                 process (ID) is gone, makes run ID's hosts,
                                 writes MAP ("ADDRESS NAMESPACE" lines) and
                                 prints the two addresses; exit 77 (and
                                 nothing left) where namespaces cannot be
                                 made (not root, no CAP_NET_ADMIN, no `ip`)
  netns.py down P ID             removes run ID's namespaces (ending what
                                 still runs in them), bridge and veths
  netns.py args SUBNET           prints mpirun_args(SUBNET), one a line
"""
import os, re, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT = os.path.join(HERE, "netns-agent.sh")
# PMIx's shared-memory store sometimes printed `PMIX ERROR: ... dstore_base.c`
# with two daemons on one machine.
ENV = {"PMIX_MCA_gds": "hash"}


def ip(*args, check=True):
    p = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and p.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {p.stderr.strip()}")
    return p


def remove_net(prefix, pid):
    """Removes run pid's namespaces (ending what still runs in them), its
    bridge and veths; quietly, whatever exists."""
    for ns in (f"{prefix}{pid}a", f"{prefix}{pid}b"):
        if os.path.exists(f"/var/run/netns/{ns}"):
            for q in ip("netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(q), 9)
                except (OSError, ValueError):
                    pass
            ip("netns", "del", ns, check=False)
        ip("link", "del", ns, check=False)  # the root side of its veth
    ip("link", "del", f"{prefix}b{pid}", check=False)


def remove_stale(prefix, keep):
    """The namespaces and links of prefix's earlier runs whose process is
    gone (all but keep's)."""
    names = os.listdir("/var/run/netns") if os.path.isdir("/var/run/netns") else []
    names += re.findall(r"^\d+: ([^:@]+)", ip("-o", "link", check=False).stdout, re.M)
    for name in names:
        m = re.fullmatch(re.escape(prefix) + r"b?(\d+)[ab]?", name)
        if m and int(m.group(1)) != keep and not os.path.exists(f"/proc/{m.group(1)}"):
            remove_net(prefix, int(m.group(1)))


def make_net(prefix, pid, subnet):
    """Two hosts on a bridge; returns {address: namespace}."""
    br = f"{prefix}b{pid}"
    ip("link", "add", br, "type", "bridge")
    ip("addr", "add", f"{subnet}.1/24", "dev", br)
    ip("link", "set", br, "up")
    hosts = {}
    for k, side in ((2, "a"), (3, "b")):
        ns = f"{prefix}{pid}{side}"
        ip("netns", "add", ns)
        ip("link", "add", ns, "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("link", "set", ns, "master", br, "up")
        ip("-n", ns, "addr", "add", f"{subnet}.{k}/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")
        hosts[f"{subnet}.{k}"] = ns
    return hosts


def up(prefix, pid, subnet, map_path):
    """remove_stale, make_net and the map file; None (nothing left made)
    where namespaces cannot be made, with the reason on stderr."""
    if not shutil.which("ip"):
        print("no `ip` (iproute2)", file=sys.stderr)
        return None
    try:
        remove_stale(prefix, pid)
        hosts = make_net(prefix, pid, subnet)
    except (RuntimeError, OSError) as e:
        remove_net(prefix, pid)
        print(f"cannot make network namespaces ({e}); this needs root (CAP_NET_ADMIN)",
              file=sys.stderr)
        return None
    with open(map_path, "w") as f:
        f.writelines(f"{a} {ns}\n" for a, ns in hosts.items())
    return hosts


def mpirun_args(subnet):
    """mpirun's options for ranks on the hosts of subnet, over TCP only.
    `rtc ^hwloc`: each daemon would write its hardware topology into shared
    memory at a fixed address, and two daemons on one machine (our two
    "hosts" share its memory) sometimes collide there: the second daemon
    crashed in hwloc_shmem_topology_write (seen once in a ctest run). The
    ranks then read the topology themselves."""
    net = f"{subnet}.0/24"
    return ["--mca", "rtc", "^hwloc", "--mca", "plm_rsh_agent", AGENT,
            "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", net,
            "--mca", "oob_tcp_if_include", net,
            "--mca", "oob_tcp_keepalive_time", "2", "--mca", "oob_tcp_keepalive_intvl", "1",
            "--mca", "oob_tcp_keepalive_probes", "3"]


def main(argv):
    if len(argv) == 5 and argv[0] == "up":
        hosts = up(argv[1], int(argv[2]), argv[3], argv[4])
        if hosts is None:
            return 77
        print(*sorted(hosts))
        return 0
    if len(argv) == 3 and argv[0] == "down":
        remove_net(argv[1], int(argv[2]))
        return 0
    if len(argv) == 2 and argv[0] == "args":
        print(*mpirun_args(argv[1]), sep="\n")
        return 0
    print(__doc__.split("As a command, for scripts:\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
