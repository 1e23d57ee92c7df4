"""Aequitas on real links (issue 24): weighted classes on a shaped bottleneck
(:mod:`tailbound.enforce.weighted`: HTB guaranteed rates in the weights' proportion, ceil the
link, DSCP filters) and the core's admission controller in ``tailbound-replay rpc``.

The namespaces of ``test_net_live.py`` (client, bridge, server), the client's egress the
bottleneck: weighted classes at :data:`LINK` (50 Mbit/s) under the link-rate root; the switch and
the server do not queue.

- ``test_weighted_classes_share_as_the_weights``: how close HTB with weighted guarantees is to
  WFQ (``docs/enforcement.md``, "Weighted classes"): three backlogged iperf3 flows marked 8:4:1,
  their throughput shares against the weights (and ``enforce net --classes``' drift check);
  ``test_a_light_class_waits_for_a_packet_of_a_heavy_one_not_its_queue`` (``slow``): the RNL of
  a light class's small RPCs while a heavy class floods the link, against the same RPCs alone
  and behind one FIFO.
- ``test_admission_tracks_the_slo_as_the_offered_share_grows``: RPCs of 8 KiB, Poisson at 90 %
  of the link, a share ``x`` of them requesting QoS_h (weight 4, SLO :data:`SLO_S` for the
  whole RPC at the 99.9th percentile), the rest QoS_l (weight 1); ``x`` swept over
  :data:`SHARES`. The measured 99.9th percentile of the admitted QoS_h RPCs' RNL (after the
  warm-up) must stay within the SLO widened by the live tolerance rule
  (``live_tolerance.slo_tolerance``: ``floor`` the p99 of a lone RPC on the idle path, ``3 %``
  of the SLO, the percentile's sampling error on the run itself) plus ``stall``, the pacer's
  largest lateness beyond 1 ms (a stall of the shared VM delays every RPC in flight, as in
  ``test_replay_live``); the admitted QoS_h share must fall as ``x`` grows, and be below 1 at
  the largest ``x``, where QoS_h alone would exceed its guaranteed rate.

The client and the server run at real-time priority (``chrt -f 50``). Needs root, namespaces,
HTB, nftables and iperf3 (skipped saying which otherwise) and the replayer binary.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tailbound.enforce import net, replay
from tailbound.enforce.rpc_replay import RpcClass, RpcResults, Rpcs, client_config, run_rpcs
from tailbound.enforce.weighted import FIRST_MINOR, WeightedClass, weighted_config

from .live_tolerance import rank_band, slo_tolerance

_spec = importlib.util.spec_from_file_location(
    "_tailbound_net_live_aeq", Path(__file__).with_name("test_net_live.py")
)
assert _spec is not None and _spec.loader is not None
_live = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _live
_spec.loader.exec_module(_live)
bed = _live.bed  # the namespaces fixture (skips when root, netns, HTB or nftables are missing)
Bed = _live.Bed
CLIENT_IP, SERVER_IP = _live.CLIENT_IP, _live.SERVER_IP

try:
    BINARY = replay.binary()
except replay.ReplayError as e:  # pragma: no cover - make install builds it
    pytest.skip(f"Aequitas live tests skipped: {e}", allow_module_level=True)

LINK = 6_250_000  # 50 Mbit/s in bytes/s: the bottleneck
RT = ["chrt", "-f", "50"] if shutil.which("chrt") else []
PORT = 7301
#: QoS_h and QoS_l: weights 4:1 (the paper's two-class setup), DSCP EF and CS0.
CLASSES = [WeightedClass("h", 4, 46), WeightedClass("l", 1, 0)]
SLO_S = 0.015  # QoS_h's SLO, seconds per RPC at the 99.9th percentile
PCTL = 0.999
SIZE = 8192  # bytes per RPC (6 MTUs of 1448)
LOAD = 0.9  # offered load, of the link, on the wire
WIRE = SIZE + 6 * 66  # the RPC's bytes on the wire (66 bytes of headers per segment)
SHARES = (0.3, 0.6, 0.9)  # offered QoS_h share of the RPCs
SECONDS, WARMUP = 11.0, 3.0
#: The controller: the paper's α, β (per MTU of a missing RPC) and floor; whole-RPC RNL against
#: the SLO (the authors' ``normalized_lat: 0``); an increase window of 0.5 s instead of the
#: derived SLO / (1 − 0.999) = 15 s, so that it settles within a run: at the ~400 QoS_h RPCs/s
#: here, α per 0.5 s against β · 6 per miss balances at about one miss in 1000 admitted RPCs.
ADMISSION = {"increment_window_s": [0.5], "per_mtu": False, "alpha": 0.01, "beta": 0.01}


def _server(b: Bed, seconds: float) -> subprocess.Popen[str]:
    proc, _ = replay.serve([PORT], seconds, prefix=["ip", "netns", "exec", b.server, *RT])
    return proc


def _bottleneck(b: Bed, classes: list[WeightedClass]) -> None:
    """Weighted classes on the client's egress; the switch ports and the server unshaped."""
    for ns, dev in ((b.switch, "wc"), (b.switch, "ws"), (b.server, "s0"), (b.client, "c0")):
        with net.Host(ns) as host:
            net.remove(host, dev)
    with net.Host(b.client) as host:
        assert net.apply(host, weighted_config("c0", classes, LINK))
        assert not net.apply(host, weighted_config("c0", classes, LINK))  # idempotent
        assert not net.diff(host, weighted_config("c0", classes, LINK))


def _poisson(rate: float, seconds: float, share_h: float, seed: int, size: int = SIZE) -> Rpcs:
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1 / rate, int(rate * seconds * 1.2) + 10))
    t = t[t < seconds]
    cls = np.where(rng.random(len(t)) < share_h, "h", "l")
    return Rpcs(t, ["s"] * len(t), list(cls), np.full(len(t), size))


def _config(slo_s: float = SLO_S, admission: dict | None = None, seed: int = 1) -> dict:
    return client_config(
        {"s": f"{SERVER_IP}:{PORT}"},
        [RpcClass(c.name, c.dscp, slo_s if c is not CLASSES[-1] else None) for c in CLASSES],
        ADMISSION if admission is None else admission,
        seed=seed,
    )


def _client(b: Bed) -> list[str]:
    return ["ip", "netns", "exec", b.client, *RT]


def _iperf(b: Bed, port: int, tos: int, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *("ip", "netns", "exec", b.client, "iperf3", "-c", SERVER_IP, "-p", str(port)),
            *("-S", str(tos), "-t", str(seconds), "-J"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _iperf_servers(b: Bed, ports: list[int]) -> list[subprocess.Popen[bytes]]:
    procs = [
        subprocess.Popen(
            ["ip", "netns", "exec", b.server, "iperf3", "-s", "-1", "-p", str(p)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for p in ports
    ]
    time.sleep(0.5)
    return procs


def _class_bytes(b: Bed) -> dict[int, int]:
    """Bytes each HTB class of the client's egress has sent (by class id)."""
    with net.Host(b.client) as host:
        idx = host.index("c0")
        return {
            int(c["handle"]): int(c.get_nested("TCA_STATS2", "TCA_STATS_BASIC")["bytes"])
            for c in host.ipr.get_classes(idx)
        }


def test_weighted_classes_share_as_the_weights(bed: Bed) -> None:
    classes = [WeightedClass("h", 8, 46), WeightedClass("m", 4, 26), WeightedClass("l", 1, 0)]
    _bottleneck(bed, classes)
    # the command line: --check holds, a class changed behind our back is drift (exit 1), and
    # applying again puts the plan back
    f = bed.tmp / "classes.json"
    f.write_text(json.dumps({"classes": [c.__dict__ for c in classes]}))
    cli = ["enforce", "net", "--classes", str(f), "--link-rate", "50mbit", "--device", "c0"]
    cli += ["--netns", bed.client]
    assert bed.tailbound(*cli, "--check").returncode == 0
    tc = ["tc", "class", "change", "dev", "c0", "parent", "7462:1", "classid", "7462:20", "htb"]
    _live.sh(*tc, "rate", "20mbit", "ceil", "50mbit", "quantum", "12112", ns=bed.client)
    assert bed.tailbound(*cli, "--check").returncode == 1
    assert "rate 2500000B/s" in bed.tailbound(*cli, "--diff").stdout
    p = bed.tailbound(*cli)
    assert p.returncode == 0 and "installed" in p.stdout, p.stderr
    assert bed.tailbound(*cli, "--check").returncode == 0
    ports = [5301, 5302, 5303]
    servers = _iperf_servers(bed, ports)
    seconds, window = 6.0, 3.0
    flows = [_iperf(bed, p, c.dscp << 2, seconds) for p, c in zip(ports, classes, strict=True)]
    # the scheduler's shares: bytes each class sent in the middle of the flows (all backlogged)
    time.sleep(1.5)
    before = _class_bytes(bed)
    time.sleep(window)
    after = _class_bytes(bed)
    for flow in flows:
        _, err = flow.communicate(timeout=seconds + 30)
        assert flow.returncode == 0, err
    for s in servers:
        s.wait(timeout=10)
    ids = [net.ROOT | (FIRST_MINOR + k) for k in range(len(classes))]
    sent = np.array([after[i] - before[i] for i in ids], dtype=float)
    total = sent.sum()
    weights = np.array([c.weight for c in classes]) / sum(c.weight for c in classes)
    print("\n| class | weight | WFQ share | HTB share measured | rate measured |")
    print("|---|---|---|---|---|")
    for c, w, x in zip(classes, weights, sent, strict=True):
        rate = 8 * x / window / 1e6
        print(f"| {c.name} | {c.weight:g} | {w:.3f} | {x / total:.3f} | {rate:.2f} Mbit/s |")
    print(f"link {8 * total / window / 1e6:.2f} Mbit/s of {8 * LINK / 1e6:g} (frames, headers in)")
    # WFQ: each class's share within 0.02 of its weight's (8:4:1 is 0.615, 0.308, 0.077)
    for w, x in zip(weights, sent, strict=True):
        assert abs(x / total - w) < 0.02, (sent, weights)
    assert total > 0.95 * LINK * window


@pytest.mark.slow
def test_a_light_class_waits_for_a_packet_of_a_heavy_one_not_its_queue(bed: Bed) -> None:
    """1 KiB RPCs at 100/s in h (weight 4), with and without an l (weight 1) TCP flood, and
    with the flood through one FIFO at the same rate (``net.link_config``); h never misses its
    (generous) SLO here. About 25 s."""
    light = _poisson(100, 4.0, 1.0, seed=5, size=1024)
    server = _server(bed, 90)
    rows = {}
    try:
        _bottleneck(bed, CLASSES)
        rows["weighted, alone"] = run_rpcs(_config(slo_s=1.0), light, prefix=_client(bed))
        for label in ("weighted, l flood", "one FIFO, l flood"):
            if label.startswith("one FIFO"):
                with net.Host(bed.client) as host:
                    net.remove(host, "c0")
                    net.apply(host, net.link_config("c0", LINK))
            (srv,) = _iperf_servers(bed, [5304])
            flood = _iperf(bed, 5304, 0, 6.0)
            time.sleep(1.0)
            rows[label] = run_rpcs(_config(slo_s=1.0), light, drain_s=2, prefix=_client(bed))
            out, _ = flood.communicate(timeout=40)
            srv.wait(timeout=10)
            flood_bps = float(json.loads(out)["end"]["sum_received"]["bits_per_second"])
            print(f"{label}: flood {flood_bps / 1e6:.2f} Mbit/s")
            assert flood_bps > 0.5 * 8 * LINK, "the flood did not load the link"
    finally:
        server.terminate()
        server.communicate(timeout=10)
    print("| light h RPCs (1 KiB, 100/s) | p50 | p99 | max | pacer lag max |")
    print("|---|---|---|---|---|")
    for label, r in rows.items():
        lat = r.ran_at("h")
        print(
            f"| {label} | {1e3 * np.median(lat):.2f} ms | {1e3 * r.tail('h', 0.99):.2f} ms | "
            f"{1e3 * lat.max():.2f} ms | {1e3 * np.nanmax(r.issue_lag_s):.2f} ms |"
        )
        assert r.lost == 0
    alone, loaded = rows["weighted, alone"], rows["weighted, l flood"]
    stall = max(0.0, max(float(np.nanmax(r.issue_lag_s)) for r in rows.values()) - 1e-3)
    # the light class waits about a packet of the heavy one (0.24 ms at 50 Mbit/s), not its
    # queue: its median within 0.5 ms of its median alone, its p99 within 1 ms + a host stall
    assert np.median(loaded.ran_at("h")) < np.median(alone.ran_at("h")) + 0.5e-3
    # behind one FIFO the flood's queue is the light class's too
    assert np.median(rows["one FIFO, l flood"].ran_at("h")) > np.median(loaded.ran_at("h"))
    assert loaded.tail("h", 0.99) < alone.tail("h", 0.99) + 1e-3 + stall


def _p_admit_at(r: RpcResults, seconds: float) -> float:
    """QoS_h's ``p_admit`` at the last QoS_h issue before ``seconds`` into the run."""
    h = np.flatnonzero((r.cls == "h") & (r.time_s - r.time_s[0] <= seconds))
    return float(r.p_admit[h[-1]]) if len(h) else float("nan")


def test_admission_tracks_the_slo_as_the_offered_share_grows(bed: Bed) -> None:
    _bottleneck(bed, CLASSES)
    rate = LOAD * LINK / WIRE  # RPCs per second
    server = _server(bed, 4 * (SECONDS + 10) + 30)
    try:
        lone = _poisson(50, 3.0, 1.0, seed=9)
        idle = run_rpcs(_config(slo_s=1.0), lone, drain_s=2, prefix=_client(bed))
        floor = idle.tail("h", 0.99)
        runs = [
            run_rpcs(_config(seed=k), _poisson(rate, SECONDS, x, seed=k), prefix=_client(bed))
            for k, x in enumerate(SHARES)
        ]
    finally:
        server.terminate()
        server.communicate(timeout=10)
    print(f"\nfloor (lone 8 KiB RPC, p99): {1e3 * floor:.3f} ms; {rate:.0f} RPCs/s offered")
    print(
        "| offered h share | h RPCs/s offered | admitted share | h p99.9 RNL (admitted) "
        "| l p99.9 RNL | tolerance | lag p99, max | h p_admit at 1, 3, 6, 9, 11 s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    shares, failures = [], []
    for x, r in zip(SHARES, runs, strict=True):
        assert r.lost == 0
        share = r.admitted_share("h", start_s=WARMUP + r.time_s[0])
        shares.append(share)
        start = WARMUP + r.time_s[0]
        h = r.tail("h", PCTL, start_s=start)
        n = len(r.ran_at("h", start_s=start))
        d = rank_band(PCTL, n)
        rank = max(
            abs(r.tail("h", min(PCTL + d, 1.0), start_s=start) - h),
            abs(h - r.tail("h", PCTL - d, start_s=start)),
        )
        lags = r.issue_lag_s[np.isfinite(r.issue_lag_s)]
        stall = max(0.0, float(lags.max()) - 1e-3)
        median, _, tol = slo_tolerance(SLO_S, [h], rank, floor)
        tol += stall
        print(
            f"| {x:g} | {x * rate:.0f} | {share:.3f} | {1e3 * h:.2f} ms (n = {n}) | "
            f"{1e3 * r.tail('l', PCTL, start_s=start):.1f} ms | {1e3 * tol:.2f} ms | "
            f"{1e3 * np.percentile(lags, 99):.2f}, {1e3 * lags.max():.2f} ms | "
            + ", ".join(f"{_p_admit_at(r, s):.2f}" for s in (1, 3, 6, 9, SECONDS))
            + " |"
        )
        if median > SLO_S + tol:
            failures.append(f"x = {x}: h p99.9 {h:.4f} s above {SLO_S} + {tol:.4f} s")
        # the pacer is on time but for stalls (its lag counts in the tolerance above, `stall`;
        # a loaded host delays a percent of the issues by several ms, so only the median is
        # held to the pacer's own resolution)
        assert float(np.median(lags)) < 1e-3, f"the pacer lags: median {np.median(lags):.4f} s"
    assert not failures, failures
    # the admitted share falls as the offered share grows, and QoS_h beyond its guaranteed rate
    # (0.9 · 0.9 = 81 % of the link against 80 %) is downgraded in part
    assert all(b <= a + 0.02 for a, b in itertools.pairwise(shares)), shares
    assert shares[-1] < shares[0] - 0.1, shares
    assert shares[-1] < 0.95, shares
