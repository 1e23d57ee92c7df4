"""Network enforcement measured for real: three network namespaces (client, a bridge acting as a
switch that honours DSCP by strict priority, server) joined by veth pairs, every egress held to
100 Mbit/s by the link-rate root of its HTB tree, a Plan applied with ``tailbound enforce net``,
real traffic (a TCP request/response probe and iperf3 floods) and its latencies measured.

Needs root, network namespaces, veth, bridges, HTB, u32, nftables and iperf3 (``.ci/run``
installs the Debian packages); without any of them the tests are skipped saying which. Traffic
stays between addresses inside the namespaces the fixture creates (198.18.0.0/24, the
benchmarking range), every run is bounded in time, and the namespaces are deleted afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, Plan, StageLimit, TenantPlan
from tailbound.stages import NETWORK_PATH, Stage

LINK = 12_500_000  # 100 Mbit/s in bytes/s
CLIENT_IP, SERVER_IP = "198.18.0.1", "198.18.0.2"
H_PORT, L_PORT, FLOOD_PORT = 5001, 5201, 5202
PROBE = Path(__file__).with_name("probe.py")
TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]
#: The probe runs at real-time priority: what it measures is the network's queueing, not the
#: 2-core machine's scheduling of a Python process beside the floods.
RT = ["chrt", "-f", "50"] if shutil.which("chrt") else []


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc)"
    for tool in ("ip", "iperf3", "nft"):
        if shutil.which(tool) is None:
            return f"needs {tool} (Debian packages iproute2, iperf3, nftables; see .ci/run)"
    return None


def sh(*cmd: str, ns: str | None = None, timeout: float = 30) -> str:
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    p = subprocess.run(full, capture_output=True, text=True, timeout=timeout, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {p.stderr.strip()}")
    return p.stdout


@dataclass
class Bed:
    client: str
    server: str
    switch: str
    tmp: Path

    def tailbound(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*TAILBOUND, *args], capture_output=True, text=True, timeout=60, check=False
        )

    def enforce(self, plan: Path, hosts: Path) -> None:
        for host, ns, dev in (("c", self.client, "c0"), ("s", self.server, "s0")):
            p = self.tailbound(
                "enforce",
                "net",
                "--plan",
                str(plan),
                "--host",
                host,
                "--hosts",
                str(hosts),
                "--device",
                dev,
                "--netns",
                ns,
            )
            assert p.returncode == 0, p.stderr
        for dev in ("wc", "ws"):
            p = self.tailbound(
                "enforce",
                "net",
                "--switch",
                "--link-rate",
                "100mbit",
                "--device",
                dev,
                "--netns",
                self.switch,
            )
            assert p.returncode == 0, p.stderr

    def link_only(self) -> None:
        """No enforcement: the same 100 Mbit/s links, one FIFO each."""
        from tailbound.enforce import net

        for ns, dev in (
            (self.client, "c0"),
            (self.server, "s0"),
            (self.switch, "wc"),
            (self.switch, "ws"),
        ):
            with net.Host(ns) as host:
                net.remove(host, dev)
                net.apply(host, net.link_config(dev, LINK))

    def probe(
        self, seconds: float, *, flood: int | None = None, udp: bool = False, rate: float = 200
    ) -> np.ndarray:
        """RTTs (s) of H's 200-byte requests at ``rate``/s, with an iperf3 flood from the client
        to port ``flood`` meanwhile (None: none); returns them and sets ``last_flood_bps``."""
        server = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                self.server,
                *RT,
                sys.executable,
                str(PROBE),
                "serve",
                str(H_PORT),
                str(seconds + 10),
                "200",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        iperf = None
        if flood is not None:
            iperf_srv = subprocess.Popen(
                ["ip", "netns", "exec", self.server, "iperf3", "-s", "-1", "-p", str(flood)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(0.3)
            iperf = subprocess.Popen(
                # UDP at 1.5 × the link: TCP's small-queue limit would keep a TCP flood's
                # queue short on its own host, a UDP flood fills the FIFO as any overload would
                [
                    "ip",
                    "netns",
                    "exec",
                    self.client,
                    "nice",
                    "-n",
                    "19",
                    "iperf3",
                    "-c",
                    SERVER_IP,
                    "-p",
                    str(flood),
                    *(["-u", "-b", "60M", "-P", "2", "-l", "1400"] if udp else []),
                    "-t",
                    str(seconds + 1.5),
                    "-J",
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(1.0)  # the flood fills the queues first
        try:
            out = sh(
                *RT,
                sys.executable,
                str(PROBE),
                "probe",
                SERVER_IP,
                str(H_PORT),
                str(rate),
                str(seconds),
                "200",
                ns=self.client,
                timeout=seconds + 20,
            )
        finally:
            server.communicate(timeout=seconds + 20)
            if iperf is not None:
                end = json.loads(iperf.communicate(timeout=seconds + 20)[0])["end"]
                if udp:
                    s = end["sum"]
                    self.last_flood_bps = s["bits_per_second"] * (1 - s["lost_percent"] / 100)
                else:
                    self.last_flood_bps = end["sum_received"]["bits_per_second"]
                iperf_srv.wait(timeout=10)
        rtts = np.array(json.loads(out))
        assert len(rtts) >= 0.95 * rate * seconds, "the probe lost requests"
        return rtts[20:]  # the connection's first requests warm caches and the ARP entry

    def flood(self, port: int, seconds: float) -> float:
        """An iperf3 flood alone; its received bits/s."""
        srv = subprocess.Popen(
            ["ip", "netns", "exec", self.server, "iperf3", "-s", "-1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.3)
        out = sh(
            "iperf3",
            "-c",
            SERVER_IP,
            "-p",
            str(port),
            "-t",
            str(seconds),
            "-J",
            ns=self.client,
            timeout=seconds + 20,
        )
        srv.wait(timeout=10)
        return float(json.loads(out)["end"]["sum_received"]["bits_per_second"])


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = _missing()
    if reason:
        pytest.skip(f"network enforcement tests skipped: {reason}")
    tag = f"tb{os.getpid() % 100000}"
    b = Bed(tag + "c", tag + "s", tag + "w", tmp_path_factory.mktemp("netenf"))
    try:
        for ns in (b.client, b.server, b.switch):
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        sh(
            "ip",
            "link",
            "add",
            "c0",
            "netns",
            b.client,
            "type",
            "veth",
            "peer",
            "name",
            "wc",
            "netns",
            b.switch,
        )
        sh(
            "ip",
            "link",
            "add",
            "s0",
            "netns",
            b.server,
            "type",
            "veth",
            "peer",
            "name",
            "ws",
            "netns",
            b.switch,
        )
        sh("ip", "link", "add", "br0", "type", "bridge", ns=b.switch)
        for ns, dev in ((b.client, "c0"), (b.server, "s0"), (b.switch, "wc"), (b.switch, "ws")):
            # one MSS per packet: no 64 KB GSO packets in the queues (docs/enforcement.md)
            sh("ip", "link", "set", "dev", dev, "gso_max_size", "1514", "gso_max_segs", "1", ns=ns)
            if ns == b.switch:
                sh("ip", "link", "set", dev, "master", "br0", ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)
        sh("ip", "link", "set", "br0", "up", ns=b.switch)
        sh("ip", "addr", "add", f"{CLIENT_IP}/24", "dev", "c0", ns=b.client)
        sh("ip", "addr", "add", f"{SERVER_IP}/24", "dev", "s0", ns=b.server)
        try:
            with_htb = subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    b.client,
                    sys.executable,
                    "-c",
                    "from tailbound.enforce import net\n"
                    "with net.Host() as h:\n"
                    f"    net.apply(h, net.link_config('c0', {LINK}))\n"
                    "    net.remove(h, 'c0')",
                ],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.skip("network enforcement tests skipped: HTB setup timed out")
        if with_htb.returncode != 0:
            pytest.skip(
                f"network enforcement tests skipped: HTB unusable: {with_htb.stderr[-300:]}"
            )
        time.sleep(1.5)  # the bridge's ports leave the listening state
        sh("ping", "-c", "1", "-W", "3", SERVER_IP, ns=b.client) if shutil.which("ping") else None
        yield b
    except RuntimeError as e:
        pytest.skip(f"network enforcement tests skipped: cannot build the namespaces: {e}")
    finally:
        for ns in (b.client, b.server, b.switch):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def _tenant(
    name: str,
    level: int,
    rate: float,
    bucket_bytes: float,
    slo: float = 0.01,
    out: tuple[float, float] | None = None,
) -> TenantPlan:
    """Bucket ``(rate, bucket_bytes)`` on ``net_in``, and on ``net_out`` too unless ``out``."""
    back = out or (rate, bucket_bytes)
    return TenantPlan(
        name=name,
        slo=Slo(slo, 0.99),
        server="s",
        device=None,
        client_host="c",
        priority=dict.fromkeys(NETWORK_PATH, level),
        limits={
            Stage.NET_IN: StageLimit(rate, bucket_bytes / LINK, float(LINK)),
            Stage.NET_OUT: StageLimit(back[0], back[1] / LINK, float(LINK)),
        },
        bound=Bound(slo, "test", 0.99),
    )


def _plan(bed: Bed, mode: str) -> tuple[Path, Path, Plan]:
    # H: a latency-sensitive tenant at the top level; L: a bulk uploader two levels below with
    # 30 % of the link and a 100 kB bucket towards the server, 1 % and 12 kB back
    plan = Plan(
        policy="test",
        servers_used=1,
        tenants=[
            _tenant("H", 0, 0.02, 12_000),
            _tenant("L", 2, 0.3, 100_000, slo=0.1, out=(0.01, 12_000)),
        ],
        disciplines={s: Discipline("priority", mode) for s in NETWORK_PATH},
    )
    path, hosts = bed.tmp / f"plan-{mode}.json", bed.tmp / "hosts.json"
    plan.save(path)
    hosts.write_text(
        json.dumps({"hosts": {"c": CLIENT_IP, "s": SERVER_IP}, "ports": {"H": H_PORT, "L": L_PORT}})
    )
    return path, hosts, plan


def _bound(plan: Plan) -> float:
    """H's worst-case network delay over its four queues (client egress, switch port to the
    server, server egress, switch port to the client), each the realised-discipline bound."""
    from tailbound.enforce.realised import network_bounds

    return network_bounds(plan, LINK)["H"]


def test_priority_keeps_the_bound_under_a_flood_and_fifo_does_not(bed: Bed) -> None:
    path, hosts, plan = _plan(bed, "shaping")
    bound = _bound(plan)
    bed.enforce(path, hosts)
    alone = bed.probe(3.0)
    floor = float(np.percentile(alone, 99))
    enforced = bed.probe(3.0, flood=FLOOD_PORT, udp=True)  # best-effort flood: no tenant's port
    enforced_flood = bed.last_flood_bps
    bed.link_only()
    unenforced = bed.probe(3.0, flood=FLOOD_PORT, udp=True)
    p99_on, p99_off = np.percentile(enforced, 99), np.percentile(unenforced, 99)
    print(
        f"\nH alone p99 {floor * 1e3:.2f} ms; bound {bound * 1e3:.2f} ms over the floor; "
        f"flood with enforcement p99 {p99_on * 1e3:.2f} ms (max {enforced.max() * 1e3:.2f}, "
        f"flood {enforced_flood / 1e6:.1f} Mbit/s); without p99 {p99_off * 1e3:.2f} ms "
        f"(flood {bed.last_flood_bps / 1e6:.1f} Mbit/s)"
    )
    assert enforced_flood > 60e6, "the flood did not load the link"
    assert p99_on <= floor + bound
    assert p99_off > floor + bound


def test_a_tenant_over_its_bucket_is_shaped(bed: Bed) -> None:
    path, hosts, plan = _plan(bed, "shaping")
    bed.enforce(path, hosts)
    seconds = 3.0
    bps = bed.flood(L_PORT, seconds)
    from tailbound.enforce.realised import wire_buckets
    from tailbound.profiles.wire import HEADER, MSS

    # the class's ceil is L's bucket on the wire (realised.wire_buckets: 30 % of the link in
    # messages, plus their headers, the ACKs of L's 1 % back and a header per message each way);
    # iperf3 counts the payload, MSS of every MSS + HEADER bytes
    (r_wire, b_wire), *_ = wire_buckets(plan.tenant("L"), Stage.NET_IN, LINK)
    limit = r_wire * 8 * MSS / (MSS + HEADER)
    print(f"\nL shaped to {limit / 1e6:.1f} Mbit/s of payload: measured {bps / 1e6:.2f} Mbit/s")
    # r·T + b over the run, b spread over T; not less than 85 % of r (TCP ramps up)
    assert 0.85 * limit <= bps <= limit + b_wire * 8 / seconds + 0.03 * limit
    rtts = bed.probe(3.0, flood=L_PORT)  # H keeps its bound while L pushes past its bucket
    assert np.percentile(rtts, 99) <= np.percentile(bed.probe(2.0), 99) + _bound(plan)


def test_a_tenant_over_its_bucket_is_demoted(bed: Bed) -> None:
    path, hosts, plan = _plan(bed, "demotion")
    bed.enforce(path, hosts)
    bps = bed.flood(L_PORT, 3.0)
    print(f"\nL demoted beyond 30 Mbit/s: measured {bps / 1e6:.2f} Mbit/s on the idle link")
    assert bps > 0.5 * LINK * 8, "demoted traffic should use the idle link"
    floor = np.percentile(bed.probe(2.0), 99)
    rtts = bed.probe(3.0, flood=L_PORT)
    print(f"H under L's demoted flood: p99 {np.percentile(rtts, 99) * 1e3:.2f} ms")
    assert np.percentile(rtts, 99) <= floor + _bound(plan)


def test_idempotent_readback_and_remove(bed: Bed) -> None:
    path, hosts, plan = _plan(bed, "shaping")
    args = (
        "enforce",
        "net",
        "--plan",
        str(path),
        "--host",
        "c",
        "--hosts",
        str(hosts),
        "--device",
        "c0",
        "--netns",
        bed.client,
    )
    bed.tailbound(*args, "--remove")
    assert bed.tailbound(*args, "--check").returncode == 1
    first = bed.tailbound(*args)
    assert first.returncode == 0 and "installed" in first.stdout
    second = bed.tailbound(*args)
    assert second.returncode == 0 and "unchanged" in second.stdout
    assert bed.tailbound(*args, "--check").returncode == 0
    assert bed.tailbound(*args, "--diff").stdout.strip() == "no difference"
    demotion, _, _ = _plan(bed, "demotion")
    d = bed.tailbound(*[a if a != str(path) else str(demotion) for a in args], "--diff")
    from tailbound.enforce.realised import wire_buckets

    (r_wire, _), *_ = wire_buckets(plan.tenant("L"), Stage.NET_IN, LINK)
    assert f"limit rate over {int(r_wire)} bytes" in d.stdout
    assert f"ceil {int(r_wire)}B/s" in d.stdout
    # a bad plan leaves the installed tree as it was
    bad = bed.tmp / "bad.json"
    doc = json.loads(demotion.read_text())
    doc["tenants"][0]["priority"]["net_in"] = 7
    bad.write_text(json.dumps(doc))
    r = bed.tailbound(*[a if a != str(path) else str(bad) for a in args])
    assert r.returncode == 2 and "tenants[0].priority.net_in" in r.stderr
    assert bed.tailbound(*args, "--check").returncode == 0
    removed = bed.tailbound(*args, "--remove")
    assert "removed" in removed.stdout
    assert "noqueue" in sh("tc", "qdisc", "show", "dev", "c0", ns=bed.client)
    assert "tailbound" not in sh("nft", "list", "ruleset", ns=bed.client)
    # a foreign root qdisc is never replaced
    sh("tc", "qdisc", "add", "dev", "c0", "root", "handle", "1:", "htb", ns=bed.client)
    r = bed.tailbound(*args)
    assert r.returncode == 2 and "did not install" in r.stderr
    assert "htb 1:" in sh("tc", "qdisc", "show", "dev", "c0", ns=bed.client)
    sh("tc", "qdisc", "del", "dev", "c0", "root", ns=bed.client)


def test_receive_side_through_ifb(bed: Bed) -> None:
    """``--ingress``: the server's received packets redirected to an IFB device holding the
    plan's tree at 100 Mbit/s, the only bottleneck of the path (the senders' trees at 1 Gbit/s
    only mark DSCP, the switch forwards at any rate): a best-effort flood from the client
    queues there, and H's requests pass it by priority; the same IFB as one FIFO at the link
    rate does not. Readback, idempotence, --diff, --check and --remove cover it."""
    from tailbound.enforce import net

    path, hosts, plan = _plan(bed, "shaping")
    common = ["--plan", str(path), "--hosts", str(hosts)]
    for host, ns, dev in (("c", bed.client, "c0"), ("s", bed.server, "s0")):
        p = bed.tailbound(
            "enforce", "net", *common, "--host", host, "--device", dev, "--netns", ns,
            "--link-rate", "1gbit",
        )  # fmt: skip
        assert p.returncode == 0, p.stderr
    for dev in ("wc", "ws"):
        with net.Host(bed.switch) as h:
            net.remove(h, dev)
    ingress = ["enforce", "net", *common, "--host", "s", "--device", "s0", "--netns", bed.server]
    ingress += ["--ingress", "--link-rate", "100mbit"]
    try:
        assert bed.tailbound(*ingress, "--check").returncode == 1
        first = bed.tailbound(*ingress)
        assert first.returncode == 0 and "s0 → tbis0: installed" in first.stdout, first.stderr
        second = bed.tailbound(*ingress)
        assert second.returncode == 0 and "unchanged" in second.stdout
        assert bed.tailbound(*ingress, "--check").returncode == 0
        assert bed.tailbound(*ingress, "--diff").stdout.strip() == "no difference"
        assert "mirred" in sh("tc", "filter", "show", "dev", "s0", "ingress", ns=bed.server)
        alone = bed.probe(2.0)
        floor = float(np.percentile(alone, 99))
        enforced = bed.probe(3.0, flood=FLOOD_PORT, udp=True)
        flood_on = bed.last_flood_bps
        with net.Host(bed.server) as h:  # the same bottleneck, one FIFO
            net.apply_ingress(h, "s0", net.link_config(net.ifb_name("s0"), LINK))
        assert bed.tailbound(*ingress, "--check").returncode == 1
        fifo = bed.probe(3.0, flood=FLOOD_PORT, udp=True)
        p99_on, p99_off = np.percentile(enforced, 99), np.percentile(fifo, 99)
        print(
            f"\nIFB at the server: H alone p99 {floor * 1e3:.2f} ms; flood (best effort, "
            f"{flood_on / 1e6:.1f} Mbit/s received) with the plan's tree p99 "
            f"{p99_on * 1e3:.2f} ms, with one FIFO {p99_off * 1e3:.2f} ms "
            f"({bed.last_flood_bps / 1e6:.1f} Mbit/s); bound {_bound(plan) * 1e3:.2f} ms"
        )
        assert flood_on < 105e6, "the IFB did not hold the flood to the link rate"
        assert p99_on <= floor + _bound(plan)
        assert p99_off > floor + _bound(plan)
    finally:
        removed = bed.tailbound(*ingress, "--remove")
    assert "ingress qdisc on s0" in removed.stdout and "ifb device tbis0" in removed.stdout
    assert "ingress" not in sh("tc", "qdisc", "show", "dev", "s0", ns=bed.server)
    assert "tbis0" not in sh("ip", "link", "show", ns=bed.server)


def test_ipv6_filters_classify_and_read_back(bed: Bed) -> None:
    """A hosts file with IPv6 addresses: u32 filters on the IPv6 header (traffic class, next
    header, addresses, ports), nftables ``ip6 dscp`` marks; the readback equals the plan, a
    second apply changes nothing, and L's TCP traffic lands in L's class."""
    v6 = {"c": "fd00:7462::1", "s": "fd00:7462::2"}
    for ns, dev, host in ((bed.client, "c0", "c"), (bed.server, "s0", "s")):
        sh("ip", "-6", "addr", "replace", f"{v6[host]}/64", "dev", dev, "nodad", ns=ns)
    path, _, _ = _plan(bed, "shaping")
    hosts = bed.tmp / "hosts6.json"
    hosts.write_text(json.dumps({"hosts": v6, "ports": {"H": H_PORT, "L": L_PORT}}))
    args = ("enforce", "net", "--plan", str(path), "--host", "c", "--hosts", str(hosts))
    args += ("--device", "c0", "--netns", bed.client)
    bed.tailbound(*args, "--remove")
    dry = bed.tailbound(*args, "--dry-run")
    assert "filter u32 ipv6 pref 101" in dry.stdout and "ip6 dscp set cs5" in dry.stdout
    first = bed.tailbound(*args)
    assert first.returncode == 0 and "installed" in first.stdout, first.stderr
    assert "unchanged" in bed.tailbound(*args).stdout
    assert bed.tailbound(*args, "--check").returncode == 0
    srv = subprocess.Popen(
        ["ip", "netns", "exec", bed.server, "iperf3", "-s", "-1", "-p", str(L_PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    try:
        sh("iperf3", "-6", "-c", v6["s"], "-p", str(L_PORT), "-t", "1", ns=bed.client)
    finally:
        srv.wait(timeout=10)
    stats = sh("tc", "-s", "class", "show", "dev", "c0", "classid", "7462:110", ns=bed.client)
    sent = int(stats.split("Sent ")[1].split()[0])
    print(f"\nL's class over IPv6: {sent} bytes")
    assert sent > 1_000_000, stats
    marks = sh("nft", "list", "table", "inet", "tailbound_c0", ns=bed.client)
    assert f"ip6 saddr {v6['c']} ip6 daddr {v6['s']} tcp dport {L_PORT}" in marks
    bed.tailbound(*args, "--remove")
