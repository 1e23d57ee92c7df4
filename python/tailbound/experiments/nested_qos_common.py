"""Shared pieces of the Nested QoS reproductions (``nested_qos_*``; Wang's thesis ch. 4,
``docs/results-nested-qos.md``): the stand-in traces, their time scaling, repetition and the
injected burst, the three schedulers' tables built from a tenant's nested SLA, and one run of a
single device queue.

**The thesis' model** (§4.1, its YACSim simulator): one server of a capacity ``C`` in IOPS
serving uniform requests, one at a time. Here that is :func:`tailbound.sim.single_queue` with
every request ``1/C`` seconds of work and MPL 1, so EDF's order is the service order
(``docs/nested-qos.md``, "When the scheduler runs"). Classes are given as the thesis gives them,
``(σ requests, ρ IOPS, δ s)``, and turned into the core's units (seconds of work and
utilisations) by :func:`scheduler`.

**The baselines, as the thesis configures them.** pClock gets one arrival curve and one latency:
the outermost envelope ``(σ_n, ρ_n)`` with the innermost deadline ``δ_1`` ("since pClock and
WF2Q use a single-level QoS model, we set the performance goal to be a deadline of ``δ_1`` for
100% of the workload", §4.4; the notes' "single class (30, 120 IOPS, 5 ms)" of the example SLA
is the same rule). WF2Q+ gets weights proportional to the workloads' long-term rates (§4.2:
"both of the workloads' bandwidth (W1 (330 IOPS) and W2 (120 IOPS)) are guaranteed").
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.cli.options import add_quiet
from tailbound.errors import ConfigError
from tailbound.policies.nested_qos import NAME as NESTED_QOS
from tailbound.policies.nested_qos import select_classes
from tailbound.sim import single_queue
from tailbound.traces import Trace
from tailbound.traces.readers import read_trace

#: The policies compared, in the issue's spelling (the algorithm of ``wf2q`` is WF2Q+).
POLICIES = (NESTED_QOS, "pclock", "wf2q")
#: The core's scheduler kind of each policy.
KINDS = {NESTED_QOS: "nested", "pclock": "pclock", "wf2q": "wf2q"}

#: The stand-ins for the thesis' traces (``../shared/data``; none is copied into the project):
#: thesis name → (file under the data folder, its reader's format).
STANDINS: dict[str, tuple[str, str]] = {
    # a WebSearch trace, as the thesis' UMass WebSearch
    "websearch": ("mqsim/wsrch-small.trace", "mqsim"),
    # Financial (UMass, OLTP): MSN-FS, a production file server's small random reads and writes
    "financial": ("msnfs/MSN-FS-30s-ms.txt", "msnfs"),
    # Exchange (a Microsoft production server at ~900 IOPS): MSN-FS, ~1050 IOPS
    "exchange": ("msnfs/MSN-FS-30s-ms.txt", "msnfs"),
    # prxy (MSR Cambridge's web proxy volume): MSR Cambridge hm_0, with offsets for the disk
    "prxy": ("msr/hm_0_head7016.csv", "msr"),
}


@dataclass(frozen=True)
class Klass:
    """One nested class in the thesis' units: ``sigma`` requests, ``rho`` IOPS, ``delta_s``
    seconds (the token bucket ``(σ, ρ)`` and its response-time bound ``δ``)."""

    sigma: float
    rho: float
    delta_s: float


@dataclass(frozen=True)
class Workload:
    """A tenant of a run: its request arrivals (s, sorted), its nested SLA (innermost class
    first) and its long-term rate (IOPS, WF2Q+'s weight)."""

    name: str
    arrival: NDArray[np.float64]
    classes: tuple[Klass, ...]
    rate_iops: float

    @property
    def deadline_s(self) -> float:
        """The innermost deadline ``δ_1``, the one every fraction in the results is judged by."""
        return self.classes[0].delta_s


def find_data(explicit: Path | None = None) -> Path:
    """The shared data folder: ``explicit``, ``$TAILBOUND_DATA``, or the first ``shared/data``
    above the working directory or the package."""
    if explicit is not None:
        return explicit
    if "TAILBOUND_DATA" in os.environ:
        return Path(os.environ["TAILBOUND_DATA"])
    for start in (Path.cwd(), Path(__file__).resolve()):
        for parent in [start, *start.parents]:
            if (parent / "shared" / "data").is_dir():
                return parent / "shared" / "data"
    raise ConfigError(None, "cannot find shared/data: pass --data or set TAILBOUND_DATA")


def standin(data: Path, thesis_name: str) -> Trace:
    """The stand-in trace for one of the thesis' workloads (:data:`STANDINS`), read whole."""
    path, fmt = STANDINS[thesis_name]
    return read_trace(data / path, fmt, name=thesis_name)


def at_rate(time_s: NDArray[np.float64], rate_iops: float) -> NDArray[np.float64]:
    """Arrivals time-scaled to a mean of ``rate_iops``: rebased to 0 and stretched so that
    ``N`` requests span ``N / rate_iops`` seconds (the order and the relative gaps are kept).

    >>> at_rate(np.array([10.0, 11.0, 12.0, 13.0]), 2.0).tolist()
    [0.0, 0.5, 1.0, 1.5]
    """
    t = np.asarray(time_s, dtype=np.float64) - float(time_s[0])
    span = float(t[-1])
    if len(t) < 2 or span <= 0:
        raise ValueError("need at least two arrivals at different times to scale")
    # the N - 1 gaps span N - 1 mean gaps of the target rate; the period is N of them
    return t * ((len(t) - 1) / rate_iops / span)


def repeat(time_s: NDArray[np.float64], duration_s: float) -> NDArray[np.float64]:
    """The arrivals repeated back to back, each copy one mean gap after the last request of
    the previous one, cut at ``duration_s`` (a stand-in shorter than the thesis' run).

    >>> repeat(np.array([0.0, 0.5, 1.0, 1.5]), 3.5).tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    """
    t = np.asarray(time_s, dtype=np.float64) - float(time_s[0])
    period = float(t[-1]) * len(t) / (len(t) - 1)
    copies = math.ceil(duration_s / period)
    out = (t[None, :] + period * np.arange(copies)[:, None]).ravel()
    return out[out < duration_s]


def inject_burst(
    time_s: NDArray[np.float64], start_s: float, end_s: float, extra_iops: float
) -> NDArray[np.float64]:
    """The arrivals with ``extra_iops`` more requests per second during ``[start_s, end_s)``:
    the workload's own arrivals that follow ``start_s``, time-scaled to ``extra_iops`` and laid
    over the window (the burst has the workload's own texture, no random draw).

    >>> inject_burst(np.arange(0.0, 10.0, 1.0), 2.0, 4.0, 2.0).tolist()
    [0.0, 1.0, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    """
    t = np.asarray(time_s, dtype=np.float64)
    n = round(extra_iops * (end_s - start_s))
    if n <= 0:
        return t
    after = t[t >= start_s]
    if len(after) < n + 1:
        raise ValueError(f"the trace has fewer than {n + 1} arrivals after {start_s} s")
    extra = start_s + at_rate(after[: n + 1], extra_iops)[:n]
    return np.sort(np.concatenate([t, extra[extra < end_s]]), kind="stable")


def scheduler(policy: str, workloads: Sequence[Workload], capacity_iops: float) -> dict[str, Any]:
    """The core's scheduler configuration of ``policy`` for ``workloads`` on a server of
    ``capacity_iops`` (a request is ``1 / capacity_iops`` seconds of work): ``nested`` with
    each workload's classes, ``pclock`` with its outermost envelope and innermost deadline,
    ``wf2q`` with weights its long-term rates (module documentation).

    >>> w = Workload("A", np.zeros(1), (Klass(10, 100, 0.005), Klass(30, 120, 0.5)), 90.0)
    >>> scheduler("pclock", [w], 1000.0)
    {'kind': 'pclock', 'buckets': [[[0.12, 0.03]]], 'deadline': [0.005]}
    """
    x = 1.0 / capacity_iops
    if policy == NESTED_QOS:
        classes = [[[k.sigma * x, k.rho * x, k.delta_s] for k in w.classes] for w in workloads]
        return {"kind": "nested", "classes": classes}
    if policy == "pclock":
        return {
            "kind": "pclock",
            "buckets": [[[w.classes[-1].rho * x, w.classes[-1].sigma * x]] for w in workloads],
            "deadline": [w.deadline_s for w in workloads],
        }
    if policy == "wf2q":
        return {"kind": "wf2q", "weight": [w.rate_iops for w in workloads]}
    raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")


def latencies(
    policy: str, workloads: Sequence[Workload], capacity_iops: float
) -> dict[str, NDArray[np.float64]]:
    """Every workload's response times (s) on one server of ``capacity_iops`` serving uniform
    requests one at a time under ``policy``. Every request finishes (the three are work
    conserving); a request left unfinished would be an error of the run, not a miss."""
    sim = single_queue(
        [w.arrival for w in workloads],
        [np.full(len(w.arrival), 1.0 / capacity_iops) for w in workloads],
        scheduler=scheduler(policy, workloads, capacity_iops),
        mpl=1,
        names=[w.name for w in workloads],
    )
    sim.run()
    out = {}
    for r in sim.results().workloads:
        if not np.all(np.isfinite(r.latency)):
            raise RuntimeError(f"{policy}: workload {r.name} left requests unfinished")
        out[r.name] = r.latency
    return out


def within(latency_s: NDArray[np.float64], deadline_s: float) -> float:
    """The fraction of requests whose response time is at most ``deadline_s`` (a relative
    1e-9 of slack for the float sums of the simulated clock).

    >>> within(np.array([0.01, 0.05, 0.0500000000001, 0.2]), 0.05)
    0.75
    """
    return float(np.mean(latency_s <= deadline_s * (1 + 1e-9))) if len(latency_s) else math.nan


def fractions(policy: str, workloads: Sequence[Workload], capacity_iops: float) -> dict[str, float]:
    """Each workload's fraction within its innermost deadline, and ``"all"``: over every
    request of every workload, each judged by its own workload's deadline."""
    lat = latencies(policy, workloads, capacity_iops)
    out = {w.name: within(lat[w.name], w.deadline_s) for w in workloads}
    met = sum(int(np.count_nonzero(lat[w.name] <= w.deadline_s * (1 + 1e-9))) for w in workloads)
    out["all"] = met / max(sum(len(lat[w.name]) for w in workloads), 1)
    return out


def parser(description: str) -> argparse.ArgumentParser:
    """The options every ``nested_qos_*`` experiment takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument("--data", type=Path, help="the shared data folder (default: shared/data)")
    add_quiet(p)
    return p


def classes_text(classes: Sequence[Klass]) -> str:
    """``(σ, ρ IOPS, δ ms)`` of each class, for logs and tables.

    >>> classes_text([Klass(20, 330, 0.05), Klass(40.25, 360, 0.5)])
    '(20, 330, 50 ms) (40.2, 360, 500 ms)'
    """
    return " ".join(f"({k.sigma:.3g}, {k.rho:.4g}, {1e3 * k.delta_s:.4g} ms)" for k in classes)


def rows_by(
    results: Mapping[str, Mapping[str, float]], names: Sequence[str]
) -> list[dict[str, object]]:
    """``policy, workload, fraction_within_deadline`` rows from per-policy fractions."""
    return [
        {"policy": p, "workload": n, "fraction_within_deadline": round(f[n], 6)}
        for p, f in results.items()
        for n in names
    ]


def profile_classes(
    time_s: NDArray[np.float64], grades: Sequence[tuple[float, float]]
) -> tuple[Klass, ...]:
    """Nested classes for grades ``(δ_i, f_i)`` of a workload of uniform requests, by the
    ``nested-qos`` policy's parameter selection (:func:`tailbound.policies.nested_qos.
    select_classes`: the thesis' §3.2.3 profiling with the decomposition it cites) with one
    unit of work per request, so ``σ`` comes out in requests and ``ρ`` in IOPS.

    Four requests at once and one a second later: at 1000 IOPS two of the four finish within
    2 ms and the last one is alone (3 of 5, 60%), all four within 4 ms.

    >>> classes_text(profile_classes(np.array([0.0] * 4 + [1.0]), [(0.002, 0.6), (0.004, 1.0)]))
    '(2, 1000, 2 ms) (4, 1000, 4 ms)'
    """
    picked = select_classes(time_s, np.ones(len(time_s)), grades)
    return tuple(Klass(c.sigma_s, c.rho, c.delta_s) for c in picked)
