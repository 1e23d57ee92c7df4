"""Tail-latency plot: latency against percentile on a "number of nines" axis (thesis Fig. 3.4).

The x axis is ``-log10(1 - p)``: 1 is the 90th percentile, 2 the 99th, 3 the 99.9th. Each
workload's SLO is drawn as a marker at its percentile.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tailbound.plotting import save_figure
from tailbound.sim.results import SimResults


def plot_tail(results: SimResults, path: str | Path, *, max_nines: float = 4.0) -> Path:
    """Write the tail-latency plot of every workload to ``path`` (PNG, PDF, SVG by suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    nines = np.linspace(0.0, max_nines, 200)
    p = 1.0 - 10.0 ** (-nines)
    for i, w in enumerate(results.workloads):
        lat = w.latency
        if lat.size == 0:
            continue
        color = f"C{i % 10}"
        ax.plot(nines, 1e3 * np.quantile(lat, p, method="inverted_cdf"), color=color, label=w.name)
        if w.slo is not None and w.slo.percentile < 1.0:
            x = -np.log10(1.0 - w.slo.percentile)
            ax.plot([x], [1e3 * w.slo.latency_s], marker="_", markersize=18, color=color)
    ax.set_xlabel("percentile (number of nines: 1 = 90%, 2 = 99%, 3 = 99.9%)")
    ax.set_ylabel("latency (ms)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    return save_figure(fig, path)
