"""Aequitas Fig. 22: against WFQ alone, strict priority, pFabric and QJump with production sizes.

The paper (Zhang et al., SIGCOMM 2022, §6.10, Fig. 22): the 33-host setup
(:mod:`tailbound.experiments.aequitas_33host`: all-to-all, per-pair bursts at ρ = 1.4, mean load
0.8, WFQ 8:4:1, 512 KiB buffers; bursts of 128 KiB a pair as the artifact's related-work runs,
:data:`BURST_BYTES`) with the production RPC size distribution and a 50/30/20 input
QoS mix, normalised SLOs; per scheme the per-QoS 99.9p RNL, the percentage of traffic meeting
its SLO from its initially assigned QoS, and the network utilisation. Aequitas admits the most
traffic meeting its SLO, with lower QoS_h / QoS_m tails than pFabric and QJump.

Here (:mod:`tailbound.experiments.aequitas_baselines` for the schemes and metrics): the SLOs
are the artifact's 25 / 35 µs per MTU (``py/related_work_comp/config``), the schemes ``wfq``,
``aequitas``, ``spq``, ``pfabric``, ``qjump``; D³, PDQ and Homa are not modelled
(``docs/aequitas.md``, "Port kinds"). All schemes get the same RPCs. The default run is the
configuration closest to the paper's (``docs/results-aequitas.md``, "Fig. 22", says why):

- ``--sizes storage-10mtu`` (:data:`DEFAULT_SIZES`): storage request sizes (MSN File Server)
  scaled to the paper's mean of 10 MTUs, a long tail (:mod:`~tailbound.experiments.aequitas_sizes`;
  ``azure-prompts``, the first stand-in, and ``azure-prompts-10mtu`` selectable);
- ``--pfabric-levels artifact``: pFabric with the artifact's eight priority levels by size
  thresholds, as its ``conf_pfabric.txt`` runs it (``exact``: the exact remaining bytes);
- the paper's metric checked (a downgraded RPC misses "from its initially assigned QoS");
  the CSV also has the shares that do not count downgrades (``*_met_slo_share_by_latency``,
  ``*_met_slo_share_admitted_only``).

``--schemes`` runs a subset (the check then reports the missing ones and exits 1).

One CSV row per scheme (:func:`~tailbound.experiments.aequitas_baselines.scheme_row`, plus the
``sizes`` and ``pfabric_levels`` used). Exit status 1 unless the paper's two claims hold
(:func:`check`): Aequitas' QoS_h share of bytes meeting the SLO is at least that of each of the
paper's baselines run here (``pfabric``, ``qjump``; within 0.01), and its QoS_h and QoS_m 99.9p
tails are below theirs. WFQ alone and SPQ are reported, not checked (the paper's Fig. 22 does
not include them). No tail is bounded by its SLO (Fig. 22 claims no such bound; Figs. 11–15
do), so there is no ``--tolerance`` (the other 33-host figures' option).

Run: ``tailbound experiment aequitas_fig22 --out DIR [--duration-s 0.05]``.
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

MIX = (0.5, 0.3, 0.2)
#: The artifact's related-work bursts are bytes (``burst_size: 131072``, ``use_burst_byte: 1``):
#: 128 KiB a pair, here as that many RPCs of the mean size.
BURST_BYTES = 131072
#: The paper's baselines a packet simulator can run here (D³, PDQ, Homa are not modelled); WFQ
#: alone and SPQ are reported for reference, not part of the paper's comparison.
COMPARED = ("pfabric", "qjump")

#: The size model of the default run (``--sizes``; :mod:`tailbound.experiments.aequitas_sizes`).
DEFAULT_SIZES = aequitas_sizes.STORAGE_10MTU
#: pFabric's priorities (``--pfabric-levels``): the exact remaining bytes or the artifact's
#: eight levels by size thresholds (``pfabric_limited_priority: 1`` in its ``conf_pfabric``).
PFABRIC_LEVELS = ("exact", "artifact")
DEFAULT_PFABRIC_LEVELS = True

Row = dict[str, float | str]


def run(
    duration_s: float,
    seed: int,
    *,
    sizes: str = DEFAULT_SIZES,
    pfabric_levels: bool = DEFAULT_PFABRIC_LEVELS,
    schemes: Sequence[str] = base.SCHEMES,
) -> list[Row]:
    """One row per scheme of ``schemes`` on the same RPCs of the size model ``sizes``."""
    dist = aequitas_sizes.size_model(sizes)
    per_burst = max(1, round(BURST_BYTES / dist.mean_bytes))
    rpcs = base.production_arrivals(
        setup.N_HOSTS, MIX, duration_s, seed, burst_load=1.4, rpcs_per_burst=per_burst, sizes=dist
    )
    rows = []
    for scheme in schemes:
        cfg = base.scheme_config(scheme, setup.N_HOSTS, seed, pfabric_levels=pfabric_levels)
        start = time.perf_counter()
        r = simulate_rpcs(rpcs, cfg)
        row = base.scheme_row(scheme, r, time.perf_counter() - start, base.SLOS_PER_MTU_S)
        row["sizes"] = sizes
        row["pfabric_levels"] = PFABRIC_LEVELS[int(pfabric_levels)]
        rows.append(row)
        print({k: v if isinstance(v, str) else round(v, 3) for k, v in rows[-1].items()})
    return rows


def plot(rows: list[Row], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    x = np.arange(len(rows))
    names = [str(r["scheme"]) for r in rows]
    for i, cls in enumerate(("qos_h", "qos_m")):
        axes[0].bar(x + 0.4 * i, [float(r[f"{cls}_p999_us_per_mtu"]) for r in rows], 0.4, label=cls)
        axes[1].bar(
            x + 0.4 * i, [100 * float(r[f"{cls}_met_slo_share"]) for r in rows], 0.4, label=cls
        )
    for i, slo in enumerate(base.SLOS_PER_MTU_S):
        axes[0].axhline(slo * 1e6, color=f"C{i}", ls="--", lw=1)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("99.9p RNL per MTU (µs)")
    axes[1].set_ylabel("% of bytes meeting SLO at the asked QoS")
    axes[2].bar(x, [100 * float(r["utilisation"]) for r in rows])
    axes[2].set_ylabel("network utilisation (%)")
    for ax in axes:
        ax.set_xticks(x + (0.2 if ax is not axes[2] else 0), names, rotation=30)
    axes[0].legend()
    sizes = rows[0].get("sizes", "") if rows else ""
    fig.suptitle(f"Aequitas Fig. 22: 33 hosts, {sizes} sizes, mix 50/30/20")
    fig.tight_layout()
    save_plot(fig, png)


def check(rows: list[Row]) -> list[str]:
    """The paper's two claims of Fig. 22 (§6.10) as failures (sentences): Aequitas has the
    most QoS_h traffic meeting its SLO from the class initially assigned (the paper's metric;
    within 0.01 of the best of :data:`COMPARED`), and lower QoS_h and QoS_m 99.9p RNL per MTU
    than pFabric and QJump. No bound on Aequitas' tail against its SLO: Fig. 22 claims none
    (Figs. 11–15 do)."""
    by = {str(r["scheme"]): r for r in rows}
    missing = [s for s in ("aequitas", *COMPARED) if s not in by]
    if missing:
        return [f"not run: {', '.join(missing)} (the check compares them)"]
    aeq = by["aequitas"]
    bad = []
    best_scheme = max(COMPARED, key=lambda s: float(by[s]["qos_h_met_slo_share"]))
    best = float(by[best_scheme]["qos_h_met_slo_share"])
    if float(aeq["qos_h_met_slo_share"]) < best - 0.01:
        bad.append(
            f"QoS_h meeting SLO: Aequitas {float(aeq['qos_h_met_slo_share']):.3f} "
            f"< {best_scheme} {best:.3f}"
        )
    for cls in ("qos_h", "qos_m"):
        mine = float(aeq[f"{cls}_p999_us_per_mtu"])
        for s in COMPARED:
            if not mine < float(by[s][f"{cls}_p999_us_per_mtu"]):
                bad.append(
                    f"{cls} tail: Aequitas {mine:.1f} ≥ {s} "
                    f"{float(by[s][f'{cls}_p999_us_per_mtu']):.1f} µs/MTU"
                )
    return bad


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(argv) if argv is not None else sys.argv[1:]
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--sizes", choices=aequitas_sizes.SIZE_MODELS, default=DEFAULT_SIZES)
    own.add_argument(
        "--pfabric-levels",
        choices=PFABRIC_LEVELS,
        default=PFABRIC_LEVELS[int(DEFAULT_PFABRIC_LEVELS)],
    )
    own.add_argument("--schemes", default=",".join(base.SCHEMES))
    opts, rest = own.parse_known_args(argv)
    schemes = tuple(s for s in opts.schemes.split(",") if s)
    bad = [s for s in schemes if s not in base.SCHEMES]
    if bad or not schemes:
        own.error(f"--schemes: unknown {bad}: a comma-separated subset of {base.SCHEMES}")
    return setup.main_of(
        rest,
        name="aequitas_fig22",
        title="Aequitas Fig. 22: against the baselines",
        description=(__doc__ or "").splitlines()[0] + OPTIONS_HELP,
        run=partial(
            run,
            sizes=opts.sizes,
            pfabric_levels=opts.pfabric_levels == PFABRIC_LEVELS[1],
            schemes=schemes,
        ),
        plot=plot,
        check=check,
        default_duration_s=0.05,
        tolerance=False,
    )


OPTIONS_HELP = (
    f" Also: --sizes {{{','.join(aequitas_sizes.SIZE_MODELS)}}} (default {DEFAULT_SIZES}),"
    f" --pfabric-levels {{{','.join(PFABRIC_LEVELS)}}} (default"
    f" {PFABRIC_LEVELS[int(DEFAULT_PFABRIC_LEVELS)]}), --schemes a comma-separated subset of"
    f" {','.join(base.SCHEMES)} (the check needs aequitas, pfabric and qjump)."
)


if __name__ == "__main__":
    raise SystemExit(main())
