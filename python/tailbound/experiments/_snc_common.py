"""Shared helpers of the SNC reproductions: locating the wc62 traces, building tenants, output
(table and plot)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tailbound.atomic import write_text_atomic
from tailbound.errors import ConfigError
from tailbound.experiments.wc_common import find_wc62
from tailbound.model import Slo, Tenant, TenantSet
from tailbound.plotting import save_figure
from tailbound.tables import markdown_table

#: wc62 traces with a similar, moderate request-direction load (0.1–0.3% of 1 Gb/s each).
SIMILAR_TRACES = (1, 5, 7, 8, 9, 10, 11, 29, 35, 38, 40, 43, 57, 59, 61, 14)


def find_data(explicit: str | None = None) -> Path:
    """The shared data folder: ``--data``, or the parent of the wc62 folder
    :func:`~tailbound.experiments.wc_common.find_wc62` finds (``$TAILBOUND_DATA``, or
    ``shared/data`` beside an ancestor of the working directory or of this package)."""
    if explicit:
        return Path(explicit)
    try:
        return find_wc62().parent
    except ConfigError as e:
        raise SystemExit(e.message) from None


def trace_path(data: Path, index: int) -> Path:
    return data / "wc62" / "traces" / f"trace{index:04d}.txt"


def tenant(
    data: Path,
    name: str,
    index: int,
    client: str,
    server: str,
    *,
    slo_s: float = 0.05,
    percentile: float = 0.999,
    group: str | None = None,
) -> Tenant:
    return Tenant(
        name=name,
        slo=Slo(slo_s, percentile),
        trace=trace_path(data, index),
        client_host=client,
        server=server,
        group=group,
    )


def tenant_set(tenants: Sequence[Tenant], link_bytes_per_s: float) -> TenantSet:
    return TenantSet(tuple(tenants), link_bytes_per_s)


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default="out/experiments", help="output folder (table and plot)")
    p.add_argument("--data", help="shared data folder (default: found automatically)")
    return p


def write_outputs(
    out: Path, name: str, title: str, header: list[str], rows: list[list], extra: str = ""
) -> Path:
    """Write ``<name>.md`` (title, Markdown table, then ``extra``) atomically and return the
    path of the plot to make."""
    out.mkdir(parents=True, exist_ok=True)
    table = markdown_table(header, rows)
    write_text_atomic(out / f"{name}.md", f"# {title}\n\n{table}\n{extra}")
    print(table)
    return out / f"{name}.png"


#: One line of a plot: x values, latencies in seconds (drawn in ms), matplotlib line keywords.
Line = tuple[Sequence[float], Sequence[float], Mapping[str, Any]]


def plot_latency_ms(
    png: Path, lines: Sequence[Line], xlabel: str, ylabel: str, *, log_y: bool = False
) -> None:
    """Save a 5 × 3.5 inch plot of latency lines (seconds in, milliseconds on the y axis) with a
    legend to ``png`` (120 dpi); ``log_y`` draws the y axis on a log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for xs, latencies_s, style in lines:
        ax.plot(xs, [v * 1e3 for v in latencies_s], **style)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, png, dpi=120)
