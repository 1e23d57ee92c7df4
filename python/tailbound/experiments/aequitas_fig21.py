"""Aequitas Fig. 21: 144 hosts, production RPC sizes, bursts of 25× a link's capacity.

The paper (Zhang et al., SIGCOMM 2022, §6.9, Fig. 21): a 144-node topology with production RPC
sizes, the burst load raised until the maximum instantaneous load of a link is 25× its
capacity; Aequitas improves QoS_h / QoS_m 99.9p RNL by 3.7× / 2.2× over WFQ alone and meets the
RNL SLOs, its tail stable after about 20 ms.

Here: 144 hosts on one big switch, all-to-all, each pair in bursts of 4 RPCs at ρ = 25 (when
every sender of a destination bursts at once its link is offered 25× its rate) and mean load
0.8 (:func:`~tailbound.experiments.aequitas_baselines.production_arrivals`), the Azure LLM
prompt sizes standing for production's, WFQ 8:4:1, 512 KiB buffers, the Fig. 12 mix
0.6/0.3/0.1 (the paper gives none for this figure), the artifact's normalised SLOs 25 / 35 µs
per MTU; WFQ alone against Aequitas on the same RPCs. 144 hosts at 0.8 of 100 Gb/s with 5.7 KB
RPCs are 250M RPCs a simulated second: the default ``--duration-s`` 0.02 (5M RPCs, the paper's
20 ms of convergence) took 1 min 14 s and 0.8 GB on this 2-core machine at load ~5
(``docs/results-aequitas.md``, "Fig. 21", gives the cost of other lengths). Much shorter runs
measure the start, when every pair's first burst arrives at once (all the run's drops and
timeouts are in its first milliseconds), not the controller.

``--sizes`` (:mod:`~tailbound.experiments.aequitas_sizes`) chooses the size model; the default
stays ``azure-prompts``: ``storage-10mtu`` (the 10-MTU storage sizes of Fig. 22's default) at
20 ms measures the start, whose first bursts then carry 9× the bytes (1.15× / 1.08× over WFQ
alone against the prompts' 2.8× / 2.1× and the paper's 3.7× / 2.2×;
``docs/results-aequitas.md``, "Fig. 21").

One CSV row per scheme (:func:`~tailbound.experiments.aequitas_baselines.scheme_row`). Exit
status 1 unless Aequitas lowers both QoS_h and QoS_m tails (per MTU, by the class run) below
WFQ alone's and keeps them within ``--tolerance`` × SLO.

Run: ``tailbound experiment aequitas_fig21 --out DIR [--duration-s 0.02]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np

from tailbound.experiments import aequitas_33host as setup
from tailbound.experiments import aequitas_baselines as base
from tailbound.experiments import aequitas_sizes
from tailbound.experiments.wc_common import save_plot
from tailbound.sim.network_rpc import simulate_rpcs

N_HOSTS = 144
BURST_LOAD = 25.0
MIX = (0.6, 0.3, 0.1)
SCHEMES = ("wfq", "aequitas")
#: The size model of the default run (``--sizes``; :mod:`tailbound.experiments.aequitas_sizes`).
DEFAULT_SIZES = aequitas_sizes.AZURE_PROMPTS

Row = dict[str, float | str]


def run(duration_s: float, seed: int, *, sizes: str = DEFAULT_SIZES) -> list[Row]:
    """WFQ alone and Aequitas on the same RPCs of the size model ``sizes``."""
    dist = aequitas_sizes.size_model(sizes)
    rpcs = base.production_arrivals(
        N_HOSTS, MIX, duration_s, seed, burst_load=BURST_LOAD, sizes=dist
    )
    rows = []
    for scheme in SCHEMES:
        cfg = base.scheme_config(scheme, N_HOSTS, seed)
        start = time.perf_counter()
        r = simulate_rpcs(rpcs, cfg)
        row = base.scheme_row(scheme, r, time.perf_counter() - start, base.SLOS_PER_MTU_S)
        row["sizes"] = sizes
        rows.append(row)
        print({k: v if isinstance(v, str) else round(v, 3) for k, v in rows[-1].items()})
    return rows


def plot(rows: list[Row], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = np.arange(3)
    for i, r in enumerate(rows):
        vals = [float(r[f"{c}_p999_us_per_mtu"]) for c in ("qos_h", "qos_m", "qos_l")]
        ax.bar(x + 0.4 * i, vals, 0.4, label=str(r["scheme"]))
    ax.plot(x[:2] + 0.2, [s * 1e6 for s in base.SLOS_PER_MTU_S], "k_", markersize=30, label="SLO")
    ax.set_xticks(x + 0.2, base.NAMES)
    ax.set_yscale("log")
    ax.set_ylabel("99.9p RNL per MTU (µs)")
    ax.legend()
    sizes = rows[0].get("sizes", "") if rows else ""
    fig.suptitle(f"Aequitas Fig. 21: 144 hosts, bursts of 25× capacity, {sizes} sizes")
    fig.tight_layout()
    save_plot(fig, png)


def check(rows: list[Row], tolerance: float) -> list[str]:
    """The paper's claim as failures (sentences)."""
    by = {str(r["scheme"]): r for r in rows}
    bad = []
    for cls in ("qos_h", "qos_m"):
        aeq = float(by["aequitas"][f"{cls}_p999_us_per_mtu"])
        wfq = float(by["wfq"][f"{cls}_p999_us_per_mtu"])
        slo = float(by["aequitas"][f"{cls}_slo_us_per_mtu"])
        if not aeq < wfq:
            bad.append(f"{cls}: Aequitas {aeq:.1f} not below WFQ alone {wfq:.1f} µs/MTU")
        if not aeq <= tolerance * slo:
            bad.append(f"{cls}: Aequitas {aeq:.1f} > {tolerance} × {slo:.0f} µs/MTU")
    return bad


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(argv) if argv is not None else sys.argv[1:]
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--sizes", choices=aequitas_sizes.SIZE_MODELS, default=DEFAULT_SIZES)
    opts, rest = own.parse_known_args(argv)
    return setup.main_of(
        rest,
        name="aequitas_fig21",
        title="Aequitas Fig. 21: 144 hosts, 25× bursts",
        description=(__doc__ or "").splitlines()[0]
        + f" Also: --sizes {{{','.join(aequitas_sizes.SIZE_MODELS)}}} (default {DEFAULT_SIZES}).",
        run=partial(run, sizes=opts.sizes),
        plot=plot,
        check=check,
        default_duration_s=0.02,
    )


if __name__ == "__main__":
    raise SystemExit(main())
