"""Aequitas Fig. 16: the QoS_h share Aequitas admits falls as 1/ρ with the burst load ρ.

The paper (Zhang et al., SIGCOMM 2022, §5.2 and §6.4, Fig. 16) varies the burst load ρ and
plots the QoS_h share Aequitas admits, with a fitted ``1/ρ`` curve: in the theoretical model of
§4.1 at least ``r · φ_h/Σφ · μ/ρ`` is admitted to QoS_h (:func:`tailbound.dnc.wfq_delay.
guaranteed_admitted_share`), the traffic whose burst rate stays within QoS_h's guaranteed rate.
The paper does not give the figure's setup beyond "we vary the burst load"; the authors'
``artifact-eval`` has no configuration for it. The setup here is the model of §4.1 (Fig. 7) on
the packet network of Fig. 11 (``aequitas_fig11``):

- 3 hosts, hosts 0 and 1 sending 32 KiB RPCs to host 2 (``incast(3, dst=2)``), WFQ 4:1, 1 MiB
  buffers, Swift-like windows and the timeout of the authors' runs;
- arrivals :class:`~tailbound.traces.rpc_arrivals.OnOffRpcs`: host 2's link receives ON periods
  at ``ρ`` × its rate (two bursts of ``RPCS_PER_BURST`` RPCs, one from each sender, interleaved)
  separated by exponential OFF periods, mean load ``μ = 0.8``: the traffic of Fig. 7 at the
  bottleneck, with random idle times;
- 90% of the RPCs ask for QoS_h (more than any admitted share here), the rest QoS_l;
- admission at a whole-RPC 99.9p target of ``SLO_S`` (25 µs), the authors' rules and their fixed
  2 ms increase window (as ``aequitas_fig11``).

``admitted_share`` is the fraction of all RPCs issued in the second half of the run (after the
controller has settled) that ran at QoS_h, as Fig. 11's; ``guaranteed_share`` is the model's
``φ/(φ + 1)/ρ`` of the traffic. What must hold (exit status 1 otherwise): ``ρ × admitted_share``
constant across ρ within a coefficient of variation (population standard deviation over mean)
of 0.2.

Run: ``tailbound experiment aequitas_fig16 --out DIR [--rhos 1.5,2,…] [--duration 1.0]`` (writes
``aequitas_fig16.csv``: ``rho, admitted_share`` and ``guaranteed_share``, ``rho_x_share``,
``admit_ratio``, ``qos_h_p999_us``, ``rpcs``, ``wall_s``; ``.md``, ``.png``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailbound.cli.exitcodes import report_failures
from tailbound.cli.options import add_quiet
from tailbound.dnc.wfq_delay import guaranteed_admitted_share
from tailbound.errors import ConfigError
from tailbound.experiments.wc_common import save_plot, write_table
from tailbound.sim.network_rpc import NetworkAdmission, NetworkConfig, simulate_rpcs
from tailbound.traces.rpc_arrivals import OnOffRpcs, incast
from tailbound.traces.sizes import FixedSize

RPC_BYTES = 32768
WEIGHTS = (4.0, 1.0)
MEAN_LOAD = 0.8
QOS_H_ASKED = 0.9
RPCS_PER_BURST = 20
SLO_S = 25e-6
INCREMENT_WINDOW_S = 2e-3
DEFAULT_RHOS = (1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0)
#: The issue's bound on the coefficient of variation of ρ × admitted share.
MAX_CV = 0.2


def config(seed: int) -> NetworkConfig:
    """The 3-host network of ``aequitas_fig11`` with admission at ``SLO_S`` a RPC."""
    admission = NetworkAdmission(
        (SLO_S,), increment_window_s=(INCREMENT_WINDOW_S,), per_mtu=False, rules="artifact"
    )
    return NetworkConfig(
        n_hosts=3, weights=WEIGHTS, buffer_bytes=1 << 20, admission=admission, seed=seed
    )


def run(rhos: Sequence[float], duration_s: float, seed: int) -> list[dict[str, float]]:
    """One row per ρ: the admitted QoS_h share over the second half of the run, the model's."""
    rows = []
    for rho in rhos:
        rpcs = OnOffRpcs(
            rho,
            MEAN_LOAD,
            FixedSize(RPC_BYTES),
            class_mix=(QOS_H_ASKED, 1.0 - QOS_H_ASKED),
            rpcs_per_burst=RPCS_PER_BURST,
            bursts_per_on=2,
        ).generate(incast(3, dst=2), duration_s, seed=seed)
        start = time.perf_counter()
        r = simulate_rpcs(rpcs, config(seed))
        wall = time.perf_counter() - start
        late = rpcs.time_s >= duration_s / 2
        share = float((r.class_run[late] == 0).mean())
        asked = late & (rpcs.cls == 0)
        rows.append(
            {
                "rho": rho,
                "admitted_share": share,
                "guaranteed_share": float(guaranteed_admitted_share(WEIGHTS, rho, MEAN_LOAD)[0])
                / MEAN_LOAD,
                "rho_x_share": rho * share,
                "admit_ratio": float((r.class_run[asked] == 0).mean()),
                "qos_h_p999_us": r.rnl_tail(0) * 1e6,
                "rpcs": float(len(rpcs)),
                "wall_s": wall,
            }
        )
        print({k: round(v, 4) for k, v in rows[-1].items()}, flush=True)
    return rows


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Population standard deviation over the mean."""
    a = np.asarray(values, dtype=np.float64)
    return float(a.std() / a.mean())


def check(rows: list[dict[str, float]]) -> list[str]:
    """The issue's condition; the failures, as sentences."""
    cv = coefficient_of_variation([r["rho"] * r["admitted_share"] for r in rows])
    return [] if cv <= MAX_CV else [f"ρ × admitted share varies by CV {cv:.3f} > {MAX_CV}"]


def plot(rows: list[dict[str, float]], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rho = np.array([r["rho"] for r in rows])
    share = np.array([r["admitted_share"] for r in rows])
    fit = float(np.mean(rho * share))  # c/ρ with c the mean of ρ × share
    grid = np.linspace(rho.min(), rho.max(), 200)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(rho, 100 * share, "o", label="admitted (simulated)")
    ax.plot(grid, 100 * fit / grid, "C0-", label=f"fit {fit:.2f}/ρ")
    ax.plot(grid, 100 * WEIGHTS[0] / sum(WEIGHTS) / grid, "k--", label="model φ/(φ+1)/ρ")
    ax.set_xlabel("burst load ρ")
    ax.set_ylabel("admitted QoS_h share (%)")
    ax.set_title("Aequitas Fig. 16: admitted QoS_h share ∝ 1/ρ")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_plot(fig, png)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument(
        "--rhos",
        default=",".join(f"{r:g}" for r in DEFAULT_RHOS),
        help="burst loads, × the link rate, comma-separated, each > 1",
    )
    p.add_argument("--duration", type=float, default=1.0, help="simulated seconds per ρ")
    p.add_argument("--seed", type=int, default=1)
    add_quiet(p)
    args = p.parse_args(argv)
    try:
        rhos = [float(s) for s in args.rhos.split(",")]
    except ValueError:
        raise ConfigError(None, f"expected numbers, got {args.rhos!r}", field="--rhos") from None
    if len(rhos) < 2 or any(not r > 1.0 for r in rhos):
        raise ConfigError(None, f"need ≥ 2 burst loads, each > 1, got {rhos}", field="--rhos")
    if not args.duration > 0.0:
        raise ConfigError(None, f"must be > 0 s, got {args.duration}", field="--duration")
    rows = run(rhos, args.duration, args.seed)
    title = "Aequitas Fig. 16: admitted QoS_h share against the burst load ρ"
    text = write_table(args.out, "aequitas_fig16", rows, title)
    cv = coefficient_of_variation([r["rho_x_share"] for r in rows])
    print(
        text
        + f"\nρ × admitted share: mean {np.mean([r['rho_x_share'] for r in rows]):.3f}, CV {cv:.3f}"
    )
    plot(rows, args.out / "aequitas_fig16.png")
    return report_failures(check(rows))


if __name__ == "__main__":
    raise SystemExit(main())
