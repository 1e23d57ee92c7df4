"""Aequitas RPCs on real links: drive ``tailbound-replay rpc`` (the sender with the core's
admission controller) and read what it measured (``docs/aequitas.md``, "On real links").

:func:`run_rpcs` writes the client's configuration (destinations, the classes with their DSCP
and SLO, the controller's parameters by the core ``Config``'s names) and its RPCs file, runs
it, and returns :class:`RpcResults`: per RPC the class requested and run, whether it was
downgraded, the channel's ``p_admit`` at issue, its size and its RNL (seconds, from its issue
to the last byte of its answer), from which :meth:`RpcResults.tail` gives a class's percentile
and :meth:`RpcResults.admitted_share` the share of a class's RPCs that ran at it. The network's
weighted classes are :mod:`tailbound.enforce.weighted`'s; the servers are ``tailbound-replay
server`` (:func:`tailbound.enforce.replay.serve`).
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.enforce.replay import BINARY_NAME, ReplayError, binary
from tailbound.errors import ConfigError
from tailbound.sim.results import percentile

#: The core ``Config`` fields the client takes under ``admission`` (``latency_target_s`` comes
#: from the classes' SLOs).
ADMISSION_FIELDS = frozenset(
    {"target_percentile", "increment_window_s", "alpha", "beta", "floor", "per_mtu", "rules"}
)


@dataclass(frozen=True)
class RpcClass:
    """A class of RPCs: its ``name``, the ``dscp`` its connections carry (0-63) and its SLO
    ``slo_s`` (seconds per RPC, or per MTU with ``per_mtu``; ``None`` for the lowest class,
    which takes the downgraded RPCs). Classes are given from the highest to the lowest."""

    name: str
    dscp: int
    slo_s: float | None = None


@dataclass(frozen=True)
class Rpcs:
    """RPCs to issue: ``time_s`` (seconds, any origin), ``dst`` and ``cls`` (names of a
    destination and a class), ``size_bytes`` (the request's bytes, header included, ≥ 32)."""

    time_s: np.ndarray
    dst: Sequence[str]
    cls: Sequence[str]
    size_bytes: np.ndarray

    def __len__(self) -> int:
        return len(self.time_s)


@dataclass(frozen=True)
class RpcResults:
    """What ``tailbound-replay rpc`` measured, one entry per RPC in issue order (arrays)."""

    time_s: np.ndarray
    cls: np.ndarray  # requested class name
    class_run: np.ndarray  # the class it ran at ("" if never issued)
    downgraded: np.ndarray  # bool
    p_admit: np.ndarray
    size_bytes: np.ndarray
    size_mtus: np.ndarray
    issue_lag_s: np.ndarray
    latency_s: np.ndarray  # RNL, NaN if unanswered
    outcome: np.ndarray

    @property
    def lost(self) -> int:
        return int(np.isnan(self.latency_s).sum())

    def ran_at(self, name: str, *, start_s: float = -math.inf) -> np.ndarray:
        """RNLs (seconds) of the RPCs that ran at class ``name`` issued from ``start_s``."""
        sel = (self.class_run == name) & (self.time_s >= start_s)
        return np.asarray(self.latency_s[sel], dtype=float)

    def tail(self, name: str, p: float, *, start_s: float = -math.inf) -> float:
        """The ``p``-th percentile (inverted CDF) of the RNL of the RPCs that ran at ``name``
        (issued from ``start_s``); an unanswered one counts as infinite."""
        lat = self.ran_at(name, start_s=start_s)
        return percentile(np.where(np.isnan(lat), np.inf, lat), p) if len(lat) else math.nan

    def admitted_share(self, name: str, *, start_s: float = -math.inf) -> float:
        """Of the RPCs requesting ``name`` (issued from ``start_s``), the share that ran at
        it."""
        asked = (self.cls == name) & (self.time_s >= start_s)
        n = int(asked.sum())
        return float((self.class_run[asked] == name).sum()) / n if n else math.nan


def client_config(
    destinations: Mapping[str, str],
    classes: Sequence[RpcClass],
    admission: Mapping[str, Any] | None = None,
    *,
    mss_bytes: float = 1448.0,
    response_bytes: int = 64,
    seed: int = 0,
) -> dict[str, Any]:
    """The client's JSON configuration: ``destinations`` (name → ``IP:PORT``), ``classes``
    (highest first; every one but the last with an SLO), ``admission`` (core ``Config`` field
    names, :data:`ADMISSION_FIELDS`). Checked here for what Python can name; the client checks
    the rest (exit status 2, naming the field)."""
    if len(classes) < 2:
        raise ConfigError(None, "at least two classes (the last the lowest)", field="classes")
    for i, c in enumerate(classes):
        last = i == len(classes) - 1
        if last and c.slo_s is not None:
            raise ConfigError(None, "the lowest class has no SLO", field=f"classes[{i}].slo_s")
        if not last and (c.slo_s is None or not (math.isfinite(c.slo_s) and c.slo_s > 0)):
            raise ConfigError(None, f"must be > 0 s, got {c.slo_s}", field=f"classes[{i}].slo_s")
    unknown = set(admission or {}) - ADMISSION_FIELDS
    if unknown:
        raise ConfigError(None, "not a controller parameter", field=f"admission.{min(unknown)}")
    return {
        "destinations": [{"name": n, "addr": a} for n, a in destinations.items()],
        "classes": [
            {"name": c.name, "dscp": c.dscp, **({} if c.slo_s is None else {"slo_s": c.slo_s})}
            for c in classes
        ],
        "admission": dict(admission or {}),
        "mss_bytes": mss_bytes,
        "response_bytes": response_bytes,
        "seed": seed,
    }


def write_rpcs(rpcs: Rpcs, path: str | Path) -> None:
    """The client's RPCs file: ``time_s,dst,class,size``."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time_s", "dst", "class", "size"])
        for t, d, c, s in zip(
            rpcs.time_s.tolist(), rpcs.dst, rpcs.cls, rpcs.size_bytes.tolist(), strict=True
        ):
            w.writerow([repr(float(t)), d, c, int(s)])


def read_results(path: str | Path) -> RpcResults:
    """Read the client's per-RPC CSV."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))

    def num(key: str) -> np.ndarray:
        return np.array([float(r[key]) if r[key] else math.nan for r in rows], dtype=float)

    return RpcResults(
        time_s=num("time_s"),
        cls=np.array([r["class"] for r in rows], dtype=object),
        class_run=np.array([r["class_run"] for r in rows], dtype=object),
        downgraded=np.array([r["downgraded"] == "1" for r in rows], dtype=bool),
        p_admit=num("p_admit"),
        size_bytes=num("size_bytes"),
        size_mtus=num("size_mtus"),
        issue_lag_s=num("issue_lag_s"),
        latency_s=num("latency_s"),
        outcome=np.array([r["outcome"] for r in rows], dtype=object),
    )


def run_rpcs(
    config: Mapping[str, Any],
    rpcs: Rpcs,
    *,
    drain_s: float = 5.0,
    start_delay_s: float = 0.5,
    prefix: Sequence[str] = (),
    workdir: str | Path | None = None,
) -> RpcResults:
    """Run ``tailbound-replay rpc`` behind ``prefix`` (e.g. ``ip netns exec NS chrt -f 50``)
    with ``config`` (:func:`client_config`) on ``rpcs``; returns what it measured. Raises
    :class:`ReplayError` if it fails (bad input, cannot connect)."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        cfg, inp, out = Path(tmp) / "rpc.json", Path(tmp) / "rpcs.csv", Path(tmp) / "out.csv"
        cfg.write_text(json.dumps(config))
        write_rpcs(rpcs, inp)
        cmd = [*prefix, str(binary()), "rpc", "--config", str(cfg), "--rpcs", str(inp)]
        cmd += ["--out", str(out), "--drain", repr(float(drain_s))]
        cmd += ["--start-delay", repr(float(start_delay_s))]
        span = float(rpcs.time_s.max() - rpcs.time_s.min()) if len(rpcs) else 0.0
        p = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=span + drain_s + start_delay_s + 30,
            check=False,
        )
        if p.returncode not in (0, 1) or not out.exists():
            raise ReplayError(f"{BINARY_NAME} rpc failed: {p.stderr.strip()[-500:]}")
        return read_results(out)
