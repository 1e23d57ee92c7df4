"""The 33-host setup of Aequitas' evaluation (§6.1, Figs. 12–15, 19, 20), shared by its experiments.

Zhang et al., "Aequitas: Admission Control for Performance-Critical RPCs in Datacenters",
SIGCOMM 2022, §6.1: 33 hosts on one big switch, all-to-all, each (source, destination) pair
issuing RPCs in bursts of 4 with Poisson gaps at a burst load ρ = 1.4 and an average load
μ = 0.8 of the destination's link (:class:`~tailbound.traces.rpc_arrivals.PairOnOffRpcs`, the
authors' ``use_dynamic_load``; the load counts the 40 B header of each packet, as their
``sizeWithHeader``), WFQ weights 8:4:1, 512 KiB of shared buffer a port, the window and timeout
of the authors' runs (``py/slo_compliance_3qos_exp/conf_aequitas.txt``), and admission at the
99.9th percentile with the increment window derived from each target (their
``smart_time_window: 1``), α = β = 0.01, the authors' update rules (``rules="artifact"``).
SLOs are whole-RPC (their ``normalized_lat: 0``) unless ``per_mtu``: the paper's 15 µs / 25 µs
for QoS_h / QoS_m (the authors' file has 14 / 25).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.cli.exitcodes import report_failures
from tailbound.cli.options import add_quiet
from tailbound.experiments.wc_common import write_table
from tailbound.sim.network_rpc import NetworkAdmission, NetworkConfig, NetworkRun
from tailbound.traces.rpc_arrivals import PairOnOffRpcs, RpcArrivals, all_to_all
from tailbound.traces.sizes import SizeDistribution

N_HOSTS = 33
LINK_BPS = 100e9
HEADER_BYTES = 40
MSS_BYTES = 5080
BURST_LOAD = 1.4
LOAD = 0.8
RPCS_PER_BURST = 4
WEIGHTS = (8.0, 4.0, 1.0)
SLOS_S = (15e-6, 25e-6)


def wire_bytes(size_bytes: int) -> int:
    """An RPC's bytes on the wire: its payload plus a 40 B header per packet of 5080 B."""
    return size_bytes + -(-size_bytes // MSS_BYTES) * HEADER_BYTES


def arrivals(
    sizes: SizeDistribution,
    mean_size_bytes: int,
    class_mix: tuple[float, ...],
    duration_s: float,
    seed: int,
    *,
    burst_load: float = BURST_LOAD,
) -> RpcArrivals:
    """All-to-all on/off RPCs of the 33 hosts for ``duration_s`` s; the load counts headers
    (the link rate scaled by payload / wire bytes of an RPC of ``mean_size_bytes``)."""
    rate = LINK_BPS * mean_size_bytes / wire_bytes(mean_size_bytes)
    gen = PairOnOffRpcs(
        burst_load,
        LOAD,
        sizes,
        class_mix=class_mix,
        rpcs_per_burst=RPCS_PER_BURST,
        link_rate_bps=rate,
    )
    return gen.generate(all_to_all(N_HOSTS), duration_s, seed=seed)


def config(
    admission: bool,
    seed: int,
    *,
    slos_s: tuple[float, ...] = SLOS_S,
    per_mtu: bool = False,
    increment_window_s: tuple[float, ...] | None = None,
) -> NetworkConfig:
    """The 33-host network, with Aequitas at ``slos_s`` (s per RPC, or per MTU with
    ``per_mtu``) when ``admission``, else WFQ alone; ``increment_window_s`` None derives the
    windows from the targets (1000 × each at the 99.9th percentile)."""
    adm = (
        NetworkAdmission(
            slos_s, per_mtu=per_mtu, rules="artifact", increment_window_s=increment_window_s
        )
        if admission
        else None
    )
    return NetworkConfig(n_hosts=N_HOSTS, weights=WEIGHTS, admission=adm, seed=seed)


def outstanding(run: NetworkRun, cls: int, n_samples: int = 20000) -> NDArray[np.float64]:
    """RPCs outstanding (issued, last packet not yet acknowledged) at ``cls`` towards one
    destination, i.e. behind one switch port, at ``n_samples`` evenly spaced instants of the
    middle 80% of the run, for every destination: a flat array of counts (Fig. 13)."""
    rpcs = run.rpcs
    t0 = rpcs.time_s[0] + 0.1 * (rpcs.time_s[-1] - rpcs.time_s[0])
    t1 = rpcs.time_s[0] + 0.9 * (rpcs.time_s[-1] - rpcs.time_s[0])
    grid = np.linspace(t0, t1, n_samples)
    finish = np.where(np.isnan(run.finish_s), np.inf, run.finish_s)
    counts = []
    for d in range(rpcs.n_hosts):
        m = (run.class_run == cls) & (rpcs.dst == d)
        starts = np.sort(rpcs.time_s[m])
        ends = np.sort(finish[m])
        n = np.searchsorted(starts, grid, side="right") - np.searchsorted(ends, grid, "right")
        counts.append(n)
    return np.concatenate(counts).astype(np.float64)


def run_share_over_time(
    run: NetworkRun, cls: int, window_s: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The fraction of the RPCs issued in each ``window_s`` window that ran at ``cls``:
    (window start times in s, shares; NaN for an empty window) — the admitted share over time."""
    t = run.rpcs.time_s - run.rpcs.time_s[0]
    idx = (t // window_s).astype(np.int64)
    total = np.bincount(idx).astype(np.float64)
    at = np.bincount(idx, weights=(run.class_run == cls).astype(np.float64), minlength=len(total))
    with np.errstate(invalid="ignore"):
        share = at / total
    return np.arange(len(total), dtype=np.float64) * window_s, share


def main_of(
    argv: Sequence[str] | None,
    *,
    name: str,
    title: str,
    description: str,
    run: Callable[[float, int], list[dict[str, Any]]],
    plot: Callable[[list[dict[str, Any]], Path], None],
    check: Callable[..., list[str]],
    default_duration_s: float = 0.5,
    tolerance: bool = True,
) -> int:
    """The command of a 33-host figure (``aequitas_fig12``, ``aequitas_fig21``,
    ``aequitas_fig22``): ``--out``, ``--duration-s`` (simulated s), ``--tolerance`` (allowed
    tail / SLO) when the figure bounds tails by their SLO (``tolerance``: ``check(rows,
    tolerance)``; otherwise ``check(rows)``, no such option), ``--seed``; writes
    ``<name>.csv``/``.md``/``.png`` and exits 1 when ``check`` finds a failure."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument(
        "--duration-s", type=float, default=default_duration_s, help="simulated time (s)"
    )
    if tolerance:
        p.add_argument("--tolerance", type=float, default=1.25, help="allowed tail / SLO")
    p.add_argument("--seed", type=int, default=1)
    add_quiet(p)
    args = p.parse_args(argv)
    rows = run(args.duration_s, args.seed)
    print(write_table(args.out, name, rows, title))
    plot(rows, args.out / f"{name}.png")
    return report_failures(check(rows, args.tolerance) if tolerance else check(rows))
