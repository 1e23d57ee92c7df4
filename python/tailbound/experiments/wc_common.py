"""Shared pieces of the WorkloadCompactor experiments (``wc_*`` modules): the wc62 workloads
(characterised once and cached as JSON), resampled synthetic workloads, the server model a run
places with (``--server-model``: the sound model of docs/dnc.md by default, as ``tailbound
place``; ``reference`` for the WorkloadCompactor system's Eq. 5.1, to compare with the thesis),
running a policy, and writing a table (CSV and Markdown) and a plot.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.atomic import atomic_path, write_text_atomic
from tailbound.characterize import RbCurve
from tailbound.cli.options import add_quiet
from tailbound.errors import ConfigError
from tailbound.model import Cluster, Server, Slo, load_cluster, load_tenants
from tailbound.plotting import save_figure
from tailbound.policies.registry import registered
from tailbound.policies.server import REFERENCE, Placed, ServerModel, check
from tailbound.policies.wc_lp import solve
from tailbound.policies.workload import TenantCurves, characterize_all
from tailbound.policies.workloadcompactor import LEVEL_MPL, server_model
from tailbound.profiles import SsdProfile
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces.readers import read_trace

#: The SLOs of thesis Fig. 5.4 (seconds).
FIG54_SLOS = (0.1, 0.15, 0.25, 0.5, 1.0)
#: The policies compared in Fig. 5.4, WorkloadCompactor first.
POLICIES = registered(
    ("workloadcompactor", "effective-bandwidth", "average-rate:1.5", "average-rate:2", "knee"),
    "placement",
)


def find_wc62(explicit: Path | None = None) -> Path:
    """The wc62 folder: ``explicit``, ``$TAILBOUND_DATA/wc62``, or ``shared/data/wc62`` beside
    the working directory or the package, or any folder above them."""
    if explicit is not None:
        return explicit
    if "TAILBOUND_DATA" in os.environ:
        return Path(os.environ["TAILBOUND_DATA"]) / "wc62"
    for start in (Path.cwd(), Path(__file__).resolve()):
        for parent in [start, *start.parents]:
            candidate = parent / "shared" / "data" / "wc62"
            if candidate.is_dir():
                return candidate
    raise ConfigError(None, "cannot find shared/data/wc62: pass --data or set TAILBOUND_DATA")


def server_cluster(devices: int = 1, servers: int = 1, bandwidth: float = 125e6) -> Cluster:
    """A cluster of identical servers (placement grows it as needed)."""
    return Cluster(
        bandwidth,
        tuple(
            Server(f"server{i:03d}", tuple(f"ssd{d}" for d in range(devices)))
            for i in range(servers)
        ),
    )


#: Version of the curve cache's format: a cache of another version is recomputed (2: with each
#: workload's largest read and write, the sound model's blocking term; version 1 lacked them, so
#: its workloads read back with unknown, infinite, largest requests).
CACHE_FORMAT = 2


def load_wc62(data: Path, cache: Path | None) -> tuple[list[TenantCurves], Cluster]:
    """The 62 workloads with their SLOs from tenants.json, curves and largest requests cached
    in ``cache`` (recomputed when the traces' sizes or :data:`CACHE_FORMAT` differ)."""
    configs = load_tenants(data / "tenants.json").tenants
    cluster = load_cluster(data / "cluster.json")
    stamp = [[c.name, c.trace.stat().st_size] for c in configs]
    if cache is not None and cache.is_file():
        doc = json.loads(cache.read_text())
        if doc.get("stamp") == stamp and doc.get("format") == CACHE_FORMAT:
            return [
                TenantCurves(
                    c.name,
                    c.slo,
                    {
                        Stage(s): RbCurve(np.array(v[0]), np.array(v[1]), v[2], Stage(s), c.name)
                        for s, v in doc["curves"][c.name].items()
                    },
                    (float(doc["largest"][c.name][0]), float(doc["largest"][c.name][1])),
                )
                for c in configs
            ], cluster
    workloads = characterize_all(
        configs,
        lambda c: read_trace(c.trace),
        profile=SsdProfile.load(data / "profile_ssd.json"),
        link_bandwidth_bytes_per_s=cluster.link_bytes_per_s,
    )
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        curves = {
            w.name: {
                str(s): [
                    w.curves[s].rates.tolist(),
                    w.curves[s].buckets.tolist(),
                    w.curves[s].mean_rate,
                ]
                for s in STORAGE_PATH
            }
            for w in workloads
        }
        largest = {w.name: list(w.largest) for w in workloads}
        doc = {"format": CACHE_FORMAT, "stamp": stamp, "curves": curves, "largest": largest}
        write_text_atomic(cache, json.dumps(doc))
    return workloads, cluster


#: The choices of ``--server-model``, the default first (as ``tailbound place``).
SERVER_MODELS = ("sound", "reference")
#: Packet size on the links of the experiments' servers, bytes (``tailbound place``'s default).
MTU_BYTES = 1500.0


def model_for(name: str, data: Path, link_bytes_per_s: float = 125e6) -> ServerModel:
    """The server model named ``name`` (:data:`SERVER_MODELS`): ``sound``, the bounds of
    docs/dnc.md ("The storage stage") for the SSD of ``data/profile_ssd.json`` behind the default
    dispatch rule (one request per level in service, no cap on less important work: what
    ``tailbound place`` uses), on links of ``link_bytes_per_s`` (bytes/s) carrying
    :data:`MTU_BYTES` packets; ``reference``, the WorkloadCompactor system's Eq. 5.1."""
    if name == "reference":
        return REFERENCE
    if name != "sound":
        raise ConfigError(None, f"--server-model: expected one of {SERVER_MODELS}, got {name!r}")
    profile = SsdProfile.load(data / "profile_ssd.json")
    return server_model(profile, link_bytes_per_s, MTU_BYTES, None, LEVEL_MPL)


def fits_alone(workload: TenantCurves, model: ServerModel = REFERENCE) -> bool:
    """Whether the workload meets its SLO on a server of its own under ``model`` (thesis
    §5.4.1: only such workloads are used)."""
    placed = [Placed(workload)]
    sol = solve(placed, 1, model)
    return sol is not None and check(placed, sol.rate, sol.bucket, 1, model)


@dataclass(frozen=True)
class Draws:
    """What :func:`draw` drew for each synthetic workload, enough to rebuild it
    (:func:`redraw`) without checking it again: the pool member's index, the factor its curves
    were scaled by and its SLO's latency (s). Three arrays of one length."""

    base: NDArray[np.int64]
    factor: NDArray[np.float64]
    slo: NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.base.shape[0])


def draw(
    pool: Sequence[TenantCurves],
    count: int,
    rng: np.random.Generator,
    *,
    slos: Sequence[float] | None = None,
    scale: tuple[float, float] = (1.0, 1.0),
    model: ServerModel = REFERENCE,
) -> tuple[list[TenantCurves], Draws]:
    """``count`` synthetic workloads (:func:`resample`) and what was drawn for each."""
    out: list[TenantCurves] = []
    base_of: list[int] = []
    factors: list[float] = []
    attempts = 0
    while len(out) < count:
        attempts += 1
        if attempts > 50 * count + 1000:
            raise RuntimeError("too few resampled workloads meet their SLO alone")
        k = int(rng.integers(len(pool)))
        factor = float(rng.uniform(*scale))
        slo = float(rng.choice(slos)) if slos is not None else pool[k].slo_s
        w = _made(pool[k], len(out), factor, slo)
        if fits_alone(w, model):
            out.append(w)
            base_of.append(k)
            factors.append(factor)
    draws = Draws(
        np.array(base_of, dtype=np.int64),
        np.array(factors, dtype=np.float64),
        np.array([w.slo_s for w in out], dtype=np.float64),
    )
    return out, draws


def resample(
    pool: Sequence[TenantCurves],
    count: int,
    rng: np.random.Generator,
    *,
    slos: Sequence[float] | None = None,
    scale: tuple[float, float] = (1.0, 1.0),
    model: ServerModel = REFERENCE,
) -> list[TenantCurves]:
    """``count`` synthetic workloads: each a random pool member, its curves scaled by a random
    factor in ``scale`` (more or less work, same shape: the same requests, so the member's
    largest read and write are kept), with a random SLO from ``slos`` (or its own), kept only if
    it meets that SLO alone under ``model``."""
    return draw(pool, count, rng, slos=slos, scale=scale, model=model)[0]


def redraw(pool: Sequence[TenantCurves], draws: Draws, prefix: str = "") -> list[TenantCurves]:
    """The workloads :func:`draw` made with ``draws`` from ``pool`` (the same curves, SLOs and
    names, each name prefixed by ``prefix``), without checking them again: ≈0.05 ms each
    against ≈1 ms for the check."""
    return [
        _made(pool[k], j, f, s, prefix)
        for j, (k, f, s) in enumerate(
            zip(draws.base.tolist(), draws.factor.tolist(), draws.slo.tolist(), strict=True)
        )
    ]


def _made(
    base: TenantCurves, position: int, factor: float, slo: float, prefix: str = ""
) -> TenantCurves:
    """Synthetic workload number ``position`` drawn from ``base``."""
    curves = {s: c.scaled(factor) for s, c in base.curves.items()} if factor != 1.0 else base.curves
    return TenantCurves(
        f"{prefix}{base.name}#{position}", Slo(slo, base.slo.percentile), curves, base.largest
    )


def write_table(out: Path, name: str, rows: list[dict[str, Any]], title: str) -> str:
    """Write ``rows`` as ``name.csv`` and ``name.md`` in ``out``; returns the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    columns = list(rows[0])
    with atomic_path(out / f"{name}.csv") as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)

    def fmt(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = [f"### {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in columns) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    write_text_atomic(out / f"{name}.md", text)
    return text


def save_plot(fig: Any, path: Path) -> None:
    """Save a matplotlib figure atomically and close it (:func:`tailbound.plotting.save_figure`)."""
    save_figure(fig, path, dpi=120, bbox_inches="tight")


def parser(description: str) -> argparse.ArgumentParser:
    """The options every ``wc_*`` experiment takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument("--data", type=Path, help="the wc62 folder (default: shared/data/wc62)")
    p.add_argument("--cache", type=Path, help="curve cache JSON (default: OUT/wc62-curves.json)")
    p.add_argument("--seed", type=int, default=0)
    add_quiet(p)
    return p


def add_server_model(p: argparse.ArgumentParser) -> None:
    """The ``--server-model`` option of the experiments that place tenants."""
    p.add_argument(
        "--server-model",
        choices=SERVER_MODELS,
        default=SERVER_MODELS[0],
        help=(
            "sound (default, as tailbound place): bounds that hold against the SSD's dispatch "
            "limits, one request per priority level in service (docs/dnc.md); reference: the "
            "WorkloadCompactor system's Eq. 5.1, the thesis' figures"
        ),
    )


def setup(args: argparse.Namespace) -> tuple[list[TenantCurves], Cluster]:
    """Load the wc62 workloads for an experiment's arguments."""
    import matplotlib

    matplotlib.use("Agg")
    data = find_wc62(args.data)
    cache = args.cache or args.out / "wc62-curves.json"
    print(f"wc62 curves from {data} (cache {cache})", file=sys.stderr)
    return load_wc62(data, cache)


def setup_model(args: argparse.Namespace, cluster: Cluster) -> ServerModel:
    """The server model of an experiment's ``--server-model`` (:func:`add_server_model`), for
    the wc62 SSD profile and ``cluster``'s links."""
    print(f"server model: {args.server_model}", file=sys.stderr)
    return model_for(args.server_model, find_wc62(args.data), cluster.link_bytes_per_s)
