"""The authors' Aequitas simulator and tailbound's network simulator, side by side in one run.

The reference is the authors' YAPS-based packet simulator (github.com/SymbioticLab/Aequitas,
branch ``artifact-eval``, whose ``py/`` folder holds the configurations of the paper's
figures). Its code is never part of this repository, and neither is its build: point
``--reference DIR`` (or ``$TAILBOUND_AEQUITAS_REFERENCE``) at a checkout you built yourself, a
folder holding the ``simulator`` program and ``py/`` (autotools are not needed: a plain
Makefile with ``Makefile.am``'s sources and flags does, and g++ 12 needs ``#include
<cstdint>`` in ``coresim/flow.h``). Without one the comparison is reported as skipped and only
ours runs (exit status 0: it is a benchmark, not a test; CI does not run it).

**The same configuration.** Each case is one of the authors' configuration files; ours is built
from that file (:func:`from_artifact_conf`): hosts, link rate, propagation, buffer, MTU, window,
timeout, delay target, WFQ weights, class mix, targets (whole-RPC with ``normalized_lat: 0``),
``dp_alpha``/``dp_beta``, the increment window (``smart_time_window`` or
``memory_time_duration``), the artifact's update rules, and the arrivals: incast
(``traffic_pattern: 0``, hosts ``0 … n−2`` into ``n−1``) or all-to-all, Poisson per (src, dst)
pair at ``load`` of the link counting headers, or per-pair on/off bursts with
``use_dynamic_load`` (:class:`~tailbound.traces.rpc_arrivals.PairOnOffRpcs`, the link rate
scaled by payload / wire bytes so that its load counts headers as theirs), ``num_flow`` RPCs,
the first by issue time. Keys that would change the model and are not translated are refused.

**What is timed**: each simulator as a new process (ours: this module with ``--ours CONF``,
arrivals drawn inside), wall clock from start to exit, CPU time (user + system) and the peak
resident memory from ``wait4`` (CPU time is the fairer figure on a shared machine); ours
also reports its time inside the simulation, theirs its "pure simulation execution time".
**What is compared**: per class the 99.9th-percentile RNL over the middle 80% of the RPCs
that ran at it, and the share of all RPCs that ran at each class.

Run: ``python -m benchmarks.bench_aequitas --reference /tmp/aeq [--cases fig11-15 …] [--rpcs
N]``; ``--cases 33-host`` is the issue's large run (10M RPCs; theirs about 4 minutes and 6.4 GB
on an idle machine); ``--rpcs N`` runs both on N RPCs instead (a copy of the configuration
file with ``num_flow`` replaced is written beside it, in the reference's folder); ``--quick``:
``--cases fig11-15 --rpcs 100000`` (what the test suite runs; skipped without a reference).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.errors import ConfigError
from tailbound.sim.network_rpc import (
    CongestionWindow,
    NetworkAdmission,
    NetworkConfig,
    simulate_rpcs,
)
from tailbound.tables import markdown_table
from tailbound.traces.rpc_arrivals import PairOnOffRpcs, RpcArrivals, all_to_all
from tailbound.traces.sizes import FixedSize

ENV = "TAILBOUND_AEQUITAS_REFERENCE"
CASES = {
    "fig11-15": "slo_compliance_2qos_exp/conf_slo_15.txt",
    "fig11-30": "slo_compliance_2qos_exp/conf_slo_30.txt",
    "fig11-45": "slo_compliance_2qos_exp/conf_slo_45.txt",
    "fig11-60": "slo_compliance_2qos_exp/conf_slo_60.txt",
    "33-host": "slo_compliance_3qos_exp/conf_aequitas.txt",
}
DEFAULT_CASES = ("fig11-15", "fig11-30", "fig11-45", "fig11-60")
#: Keys of the authors' configurations read here; any other key must hold the value listed in
#: ``NEUTRAL`` (or be one of the logging/debugging keys), else the file is refused.
NEUTRAL = {
    "host_type": "1",
    "queue_type": "6",
    "flow_type": "6",
    "big_switch": "1",
    "channel_multiplexing": "1",
    "multiplex_constant": "1",
    "cut_through": "0",
    "preemptive_queue": "0",
    "real_nic": "0",
    "test_fairness": "0",
    "burst_at_beginning": "0",
    "use_burst_byte": "0",
    "burst_with_no_spacing": "0",
    "traffic_imbalance": "0",
    "bytes_mode": "1",
}
IGNORED = {
    "debug_event_info",
    "enable_flow_lookup",
    "flow_lookup_id",
    "disable_pkt_logging",
    "disable_cwnd_logging",
    "disable_dwnd_logging",
    "load_measure_interval",
    "num_pctl",
    "pfabric_priority_type",
    "mean_flow_size",
    "load_balancing",
}
HEADER_BYTES = 40


def read_conf(path: Path) -> dict[str, str]:
    """The ``key: value`` lines of an authors' configuration file."""
    conf = {}
    for line in path.read_text().splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            conf[key.strip()] = value.strip()
    return conf


def _rpc_bytes(conf: dict[str, str], folder: Path) -> int:
    """The one RPC size of the configuration's CDF file (these configurations use one)."""
    rows = [r.split() for r in (folder / conf["flow_trace"]).read_text().splitlines() if r.strip()]
    sizes = {float(r[0]) for r in rows}
    if len(sizes) != 1:
        raise ConfigError(folder / conf["flow_trace"], "only one-size CDFs are translated")
    return int(sizes.pop())  # bytes (``bytes_mode: 1``)


def from_artifact_conf(path: Path, seed: int = 1) -> tuple[RpcArrivals, NetworkConfig]:
    """Our RPCs and network for the authors' configuration file ``path`` (see the module)."""
    conf = read_conf(path)
    for key, value in conf.items():
        known = key in IGNORED or key in NEUTRAL or key in _TRANSLATED
        if not known or (key in NEUTRAL and value != NEUTRAL[key]):
            raise ConfigError(path, f"{value!r} is not translated", field=key)
    folder = path.parent.parent
    size = _rpc_bytes(conf, folder)
    n = int(conf["num_hosts"])
    mtu = int(conf.get("mtu", "5120"))
    mss = mtu - HEADER_BYTES
    packets = -(-size // mss)
    wire = size + packets * HEADER_BYTES
    rate = float(conf["bandwidth"])
    weights = tuple(float(w) for w in conf["qos_weights"].split(","))
    mix = tuple(float(r) / 100 for r in conf["qos_ratio"].split(","))
    count = int(conf["num_flow"])
    poisson = conf.get("disable_poisson_arrival", "0") == "0"
    rng = np.random.default_rng(seed)
    if conf.get("use_dynamic_load", "0") == "1":
        if conf.get("traffic_pattern") != "1":
            raise ConfigError(path, "dynamic load is translated for all-to-all only")
        gen = PairOnOffRpcs(
            float(conf["burst_load"]),
            float(conf["load"]),
            FixedSize(size),
            class_mix=mix,
            rpcs_per_burst=int(conf["burst_size"]),
            poisson=poisson,
            link_rate_bps=rate * size / wire,
        )
        duration = 1.15 * count * wire * 8 / (rate * float(conf["load"]) * n)
        rpcs = _first(gen.generate(all_to_all(n), duration, seed=seed), count)
    else:
        rpcs = _static(conf, n, count, size, wire, rate, mix, poisson, rng)
    targets = tuple(float(t) * 1e-6 for t in conf["hardcoded_targets"].split(","))
    pctl = 1.0 - 1.0 / float(conf["target_pctl"])
    window = None
    if conf.get("smart_time_window", "0") == "0":
        window = tuple(float(conf["memory_time_duration"]) * 1e-6 for _ in targets)
    admission = None
    if conf.get("priority_downgrade", "0") == "1":
        admission = NetworkAdmission(
            targets,
            target_percentile=tuple(pctl for _ in targets),
            increment_window_s=window,
            alpha=float(conf["dp_alpha"]),
            beta=float(conf["dp_beta"]),
            per_mtu=conf.get("normalized_lat", "0") == "1",
            rules="artifact",
        )
    cc = CongestionWindow(
        enabled=conf.get("disable_aequitas_cc", "0") == "0",
        init_cwnd=float(conf["init_cwnd"]),
        max_cwnd=float(conf["max_cwnd"]),
        target_delay_s=float(conf["cc_delay_target"]) * 1e-6,
        rto_s=float(conf["retx_timeout"]) * 1e-6,
    )
    network = NetworkConfig(
        n_hosts=n,
        weights=weights,
        link_rate_bps=rate,
        propagation_s=float(conf["propagation_delay"]),
        mtu_bytes=mtu,
        header_bytes=HEADER_BYTES,
        buffer_bytes=int(conf["queue_size"]),
        cc=cc,
        admission=admission,
        seed=seed,
    )
    return rpcs, network


_TRANSLATED = {
    "init_cwnd",
    "max_cwnd",
    "retx_timeout",
    "queue_size",
    "propagation_delay",
    "bandwidth",
    "num_flow",
    "num_hosts",
    "flow_trace",
    "priority_downgrade",
    "dp_alpha",
    "dp_beta",
    "smart_time_window",
    "memory_time_duration",
    "target_pctl",
    "hardcoded_targets",
    "mtu",
    "normalized_lat",
    "traffic_pattern",
    "disable_aequitas_cc",
    "disable_poisson_arrival",
    "load",
    "use_dynamic_load",
    "burst_load",
    "burst_size",
    "cc_delay_target",
    "qos_weights",
    "qos_ratio",
}


def _first(rpcs: RpcArrivals, count: int) -> RpcArrivals:
    if len(rpcs) < count:
        raise ConfigError(None, f"drew {len(rpcs)} RPCs for {count}: lengthen the duration")
    end = float(rpcs.time_s[count - 1]) + 1e-9
    return RpcArrivals(
        rpcs.time_s[:count],
        rpcs.src[:count],
        rpcs.dst[:count],
        rpcs.size_bytes[:count],
        rpcs.cls[:count],
        rpcs.n_hosts,
        end,
    )


def _static(
    conf: dict[str, str],
    n: int,
    count: int,
    size: int,
    wire: int,
    rate: float,
    mix: tuple[float, ...],
    poisson: bool,
    rng: np.random.Generator,
) -> RpcArrivals:
    """Static load: every sending pair at ``load · rate / (n − 1)`` counting headers (theirs
    ``rpcs_per_sec_per_host``), Poisson or constant gaps."""
    if conf.get("traffic_pattern", "0") == "0":
        pairs = [(s, n - 1) for s in range(n - 1)]
    else:
        pairs = [(s, d) for s in range(n) for d in range(n) if s != d]
    gap = wire * 8 / (rate * float(conf["load"]) / (n - 1))
    per = -(-count // len(pairs)) + 16
    if poisson:
        times = np.cumsum(rng.exponential(gap, size=(len(pairs), per)), axis=1)
    else:
        times = np.tile(np.arange(1, per + 1) * gap, (len(pairs), 1))
    src = np.repeat(np.array([p[0] for p in pairs], np.int32)[:, None], per, axis=1).ravel()
    dst = np.repeat(np.array([p[1] for p in pairs], np.int32)[:, None], per, axis=1).ravel()
    order = np.argsort(times.ravel(), kind="stable")[:count]
    t = times.ravel()[order]
    cls = rng.choice(len(mix), size=count, p=np.asarray(mix) / sum(mix)).astype(np.uint8)
    sizes = np.full(count, size, np.int64)
    return RpcArrivals(t, src[order], dst[order], sizes, cls, n, float(t[-1]) + 1e-9)


def ours(conf_path: Path) -> dict[str, Any]:
    """Run ours on the configuration (in this process): results as a JSON-able dict."""
    rpcs, network = from_artifact_conf(conf_path)
    start = time.perf_counter()
    run = simulate_rpcs(rpcs, network)
    seconds = time.perf_counter() - start
    classes = len(network.weights)
    return {
        "rpcs": len(rpcs),
        "data_packets": run.counters["data_packets"],
        "sim_s": seconds,
        "p999_us": [run.rnl_tail(k) * 1e6 for k in range(classes)],
        "share": [run.run_share(k) for k in range(classes)],
        "unfinished": run.counters["unfinished"],
        "drops": run.counters["data_drops"] + run.counters["ack_drops"],
    }


def parse_theirs(text: str) -> dict[str, Any]:
    """Per class the 99.9p (mid 80%) and the RPC count, and the timings, from their output."""
    counts = [int(m) for m in re.findall(r"^Priority \d+: \((\d+) Flows", text, re.M)]
    tails = re.findall(r"^FCT \(in us\) \(mid 80% RPCs\)[^=]*= ([^\n]+)", text, re.M)
    p999 = [float(t.split(",")[5]) for t in tails]
    sim = re.search(r"Pure simulation execution time: ([\d.]+)", text)
    pkts = re.search(r"Data Pkts/sec: ([\d.]+)", text)
    total = sum(counts)
    return {
        "p999_us": p999,
        "share": [c / total for c in counts] if total else [],
        "sim_s": float(sim.group(1)) if sim else math.nan,
        "data_packets_per_s": float(pkts.group(1)) if pkts else math.nan,
    }


def timed(cmd: list[str], cwd: Path | None = None) -> tuple[str, float, float, float]:
    """Run ``cmd``: (stdout, wall seconds, CPU seconds, peak resident MB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read().decode() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}")
    return out, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--reference", help=f"the authors' built checkout (default: ${ENV})")
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(DEFAULT_CASES))
    p.add_argument(
        "--rpcs", type=int, help="run N RPCs instead of the file's num_flow (both simulators)"
    )
    p.add_argument("--ours", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true", help="--cases fig11-15 --rpcs 100000")
    args = p.parse_args(argv)
    if args.quick:
        args.cases, args.rpcs = ["fig11-15"], 100_000
    if args.ours is not None:
        print(json.dumps(ours(args.ours)))
        return 0
    ref = args.reference or os.environ.get(ENV)
    root = Path(ref).expanduser() if ref else None
    if root is not None and not (root / "simulator").is_file():
        print(f"no program {root / 'simulator'}: build the reference there first")
        return 2
    confs = root / "py" if root else Path(os.environ.get("TAILBOUND_AEQUITAS_CONFS", "."))
    if root is None:
        print(f"comparison skipped: no reference build (--reference DIR or ${ENV})")
        return 0
    rows = []
    for case in args.cases:
        conf = confs / CASES[case]
        if args.rpcs is not None:
            # A copy beside the original (its CDF path is relative to py/), num_flow replaced.
            text = re.sub(r"^num_flow:.*$", f"num_flow: {args.rpcs}", conf.read_text(), flags=re.M)
            conf = conf.with_name(f"bench_{args.rpcs}_{conf.name}")
            conf.write_text(text)
        out, wall, cpu, mb = timed(
            [sys.executable, "-m", "benchmarks.bench_aequitas", "--ours", str(conf.resolve())]
        )
        mine = json.loads(out.strip().splitlines()[-1])
        rel = str(conf.relative_to(confs))
        text, their_wall, their_cpu, their_mb = timed([str(root / "simulator"), "1", rel], confs)
        theirs = parse_theirs(text)
        tails = "; ".join(
            f"{a:.4g} vs {b:.4g}" for a, b in zip(mine["p999_us"], theirs["p999_us"], strict=False)
        )
        shares = "; ".join(
            f"{100 * a:.1f} vs {100 * b:.1f}"
            for a, b in zip(mine["share"], theirs["share"], strict=False)
        )
        rows.append(
            [
                case,
                mine["rpcs"],
                f"{mine['data_packets'] / 1e6:.1f}M",
                f"{mine['sim_s']:.1f} ({wall:.1f}, {cpu:.1f})",
                f"{theirs['sim_s']:.1f} ({their_wall:.1f}, {their_cpu:.1f})",
                f"{their_wall / wall:.1f}× ({their_cpu / cpu:.1f}×)",
                f"{mb:.0f} / {their_mb:.0f}",
                f"{mine['data_packets'] / mine['sim_s'] / 1e6:.2f}M / "
                f"{theirs['data_packets_per_s'] / 1e6:.2f}M",
                tails,
                shares,
            ]
        )
        print(rows[-1], flush=True)
    header = [
        "case",
        "RPCs",
        "data packets",
        "ours s (process wall, CPU)",
        "theirs s (process wall, CPU)",
        "speed-up wall (CPU)",
        "MB ours / theirs",
        "data pkts/s ours / theirs",
        "99.9p µs per class, ours vs theirs",
        "% RPCs per class, ours vs theirs",
    ]
    print(markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
