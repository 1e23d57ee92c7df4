"""Verification of an Aequitas plan: its RPC tenants replayed in the packet-level network
simulator, each class's tail RNL against its SLO and its admitted share against the prediction.

A plan of the ``aequitas`` policy (:mod:`tailbound.policies.aequitas`) promises, per WFQ class
above the lowest, an RNL within the class SLO at its percentile for the RPCs that run at the
class, and predicts the share of the class's RPCs admitted there (the guaranteed admitted share,
:class:`~tailbound.plan_aequitas.Prediction`). :func:`replay_aequitas_saved` replays the plan in
the same model it prescribes (:mod:`tailbound.sim.aequitas_plan`: WFQ with the plan's weights at
every port, the plan's controller at every sender, seeded with the network's ``seed``:
deterministic) and checks (:class:`ClassCheck`), for every class and for every (tenant, class) a
tenant asks for:

- ``achieved_s``: the RNL at the class's percentile (seconds per MTU or per RPC, the SLO's
  unit) of the RPCs that **ran** at the class (admitted, not downgraded), over the middle 80% of
  them by issue time (the authors' tails, ``docs/aequitas.md``: warm-up and drain left out),
  unfinished RPCs counted as infinitely late; ``met`` when it is within the SLO;
- ``admitted_share``: of the RPCs that asked for the class, the share that ran at it;
  ``share_held`` when it is at least ``(1 − SHARE_TOLERANCE)`` of the predicted share (the
  prediction is a share the controller converges to, with the noise of a finite run, not a
  worst case).

The verdict (:attr:`AequitasVerification.all_held`) is the classes' (network-wide rows): every
class met its SLO and held its share. Per-tenant rows are the same measures over one tenant's
RPCs, reported for who gets what; a tenant on a less loaded link is admitted more.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tailbound import _core
from tailbound.atomic import atomic_path
from tailbound.errors import ConfigError
from tailbound.plan import Plan
from tailbound.plan_inputs import resolve_inputs
from tailbound.sim.aequitas_plan import AequitasReplay, read_rpc_trace, replay_aequitas
from tailbound.traces.trace import Trace

#: How far below the predicted admitted share a replay may fall and still hold it (relative).
SHARE_TOLERANCE = 0.1
#: The middle share of a class's RPCs by issue time its tail is taken over (the authors' 80%).
KEEP = 0.8
#: What a class row names as its tenant (the whole network).
ALL = "all"
#: The CSV columns (:meth:`AequitasVerification.to_csv`), named as ``verify``'s where they apply.
COLUMNS = (
    "tenant",
    "class",
    "slo_s",
    "slo_unit",
    "percentile",
    "achieved_s",
    "max_s",
    "requests",
    "admitted",
    "met",
    "predicted_share",
    "admitted_share",
    "share_held",
)


@dataclass(frozen=True)
class ClassCheck:
    """One class (``tenant`` :data:`ALL`) or one tenant's RPCs of one class against the replay
    (module documentation). ``requests`` asked for the class, ``admitted`` of them ran at it;
    ``achieved_s`` and ``max_s`` in the SLO's unit (NaN: none ran there)."""

    tenant: str
    cls: str
    slo_s: float
    slo_unit: str
    percentile: float
    achieved_s: float
    max_s: float
    requests: int
    admitted: int
    predicted_share: float
    admitted_share: float

    @property
    def met(self) -> bool:
        """The tail RNL within the SLO (met when no RPC ran at the class: nothing was late)."""
        return not self.achieved_s > self.slo_s

    @property
    def share_held(self) -> bool:
        """The admitted share at least ``(1 − SHARE_TOLERANCE)`` of the prediction (held when
        no RPC asked for the class)."""
        if self.requests == 0:
            return True
        return self.admitted_share >= (1 - SHARE_TOLERANCE) * self.predicted_share


@dataclass(frozen=True)
class ClassChecks:
    """One check per class and per (tenant, class) of an Aequitas plan, whatever ran it (the
    simulator, :class:`AequitasVerification`, or real links,
    :class:`tailbound.enforce.aequitas_replay.LiveAequitas`)."""

    checks: tuple[ClassCheck, ...]

    @property
    def classes(self) -> tuple[ClassCheck, ...]:
        """The network-wide rows, one per class above the lowest."""
        return tuple(c for c in self.checks if c.tenant == ALL)

    @property
    def violations(self) -> list[str]:
        """The classes that missed their SLO."""
        return [c.cls for c in self.classes if not c.met]

    @property
    def shares_missed(self) -> list[str]:
        """The classes admitted less than the prediction allows."""
        return [c.cls for c in self.classes if not c.share_held]

    @property
    def all_held(self) -> bool:
        """Every class met its SLO and held its predicted share."""
        return not self.violations and not self.shares_missed

    def table(self) -> str:
        """A Markdown table, the classes first, then each tenant's classes."""
        rows = [
            "| tenant | class | SLO | achieved | max | RPCs | admitted | predicted | SLO met "
            "| share held |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in self.checks:
            unit = "/MTU" if c.slo_unit == "mtu" else ""
            rows.append(
                f"| {c.tenant} | {c.cls} | {_us(c.slo_s)}{unit} @ {100 * c.percentile:g}% "
                f"| {_us(c.achieved_s)}{unit} | {_us(c.max_s)}{unit} | {c.requests} "
                f"| {100 * c.admitted_share:.1f}% | {100 * c.predicted_share:.1f}% "
                f"| {'yes' if c.met else 'NO'} | {'yes' if c.share_held else 'NO'} |"
            )
        return "\n".join(rows)

    def to_csv(self, path: str | Path) -> None:
        """Write the checks as CSV (:data:`COLUMNS`; seconds, or seconds per MTU), atomically."""
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(COLUMNS)
            for c in self.checks:
                writer.writerow(
                    [
                        c.tenant,
                        c.cls,
                        c.slo_s,
                        c.slo_unit,
                        c.percentile,
                        c.achieved_s,
                        c.max_s,
                        c.requests,
                        c.admitted,
                        c.met,
                        c.predicted_share,
                        c.admitted_share,
                        c.share_held,
                    ]
                )


@dataclass(frozen=True)
class AequitasVerification(ClassChecks):
    """A plan replayed in the network simulator: its ``replay`` and the checks."""

    replay: AequitasReplay


def _us(seconds: float) -> str:
    """Seconds as µs, or as ms from 1 ms (a live plan's SLOs)."""
    if not math.isfinite(seconds):
        return "-"
    return f"{1e3 * seconds:.3g} ms" if seconds >= 1e-3 else f"{1e6 * seconds:.3g} µs"


def check_replay(replay: AequitasReplay) -> AequitasVerification:
    """Every class, and every tenant's classes, of ``replay`` checked (module documentation)."""
    run, rpcs = replay.run, replay.rpcs
    checks = check_rpcs(
        replay.plan,
        rpcs.names,
        tenant=rpcs.tenant,
        time_s=rpcs.rpcs.time_s,
        asked=rpcs.rpcs.cls,
        ran=run.class_run,
        rnl_s=run.rnl_s,
        size_mtus=run.size_mtus,
    )
    return AequitasVerification(checks=checks, replay=replay)


def check_rpcs(
    plan: Plan,
    names: Sequence[str],
    *,
    tenant: NDArray[np.integer],
    time_s: NDArray[np.float64],
    asked: NDArray[np.integer],
    ran: NDArray[np.integer],
    rnl_s: NDArray[np.float64],
    size_mtus: NDArray[np.number],
) -> tuple[ClassCheck, ...]:
    """The checks (module documentation) of RPCs however they ran, one entry per RPC:
    ``tenant`` its index in ``names``, ``time_s`` its issue time (s), ``asked`` and ``ran`` the
    index of the class it requested and ran at (among ``plan.aequitas.network.classes``; -1:
    never issued), ``rnl_s`` its RNL (s; NaN: unfinished, infinitely late) and ``size_mtus``
    its size in MTUs (the per-MTU SLOs' divisor)."""
    section = plan.aequitas
    if section is None:
        raise ConfigError(None, "missing (not an Aequitas plan)", field="aequitas")
    rnl = np.where(np.isnan(rnl_s), np.inf, np.asarray(rnl_s, dtype=np.float64))
    if section.network.slo_unit == "mtu":
        rnl = rnl / size_mtus
    start = np.asarray(time_s, dtype=np.float64)
    everyone = np.ones(len(start), dtype=bool)
    groups = [(ALL, everyone)]
    groups += [(name, tenant == k) for k, name in enumerate(names)]
    checks = []
    for who, mine in groups:
        for i, c in enumerate(section.network.classes[:-1]):
            assert c.slo_s is not None
            want = mine & (asked == i)
            if who != ALL and not want.any():
                continue
            at = mine & (ran == i)
            n, k = int(want.sum()), int((want & (ran == i)).sum())
            checks.append(
                ClassCheck(
                    tenant=who,
                    cls=c.name,
                    slo_s=c.slo_s,
                    slo_unit=c.slo_unit,
                    percentile=c.percentile,
                    achieved_s=_tail(start[at], rnl[at], c.percentile),
                    max_s=float(rnl[at].max()) if at.any() else math.nan,
                    requests=n,
                    admitted=k,
                    predicted_share=section.prediction.admitted_share.get(c.name, 1.0),
                    admitted_share=k / n if n else math.nan,
                )
            )
    return tuple(checks)


def _tail(start: NDArray[np.float64], values: NDArray[np.float64], p: float) -> float:
    if values.size == 0:
        return math.nan
    return float(_core.rnl_tail(np.ascontiguousarray(start), np.ascontiguousarray(values), p, KEEP))


def replay_aequitas_saved(
    plan: Plan,
    path: str | Path,
    *,
    tenants: str | Path | None = None,
    span: Callable[[Trace], Trace] | None = None,
) -> AequitasVerification:
    """``plan``, saved at ``path``, replayed with the traces it records (each checked against its
    hash) or those of the tenants file ``tenants`` (joined by name), each cut by ``span``."""
    section = plan.aequitas
    if section is None:
        raise ConfigError(path, "missing (not an Aequitas plan)", field="aequitas")
    names = list(section.tenants)
    inputs = resolve_inputs(plan, path, names, tenants=tenants)
    cut = span if span is not None else (lambda trace: trace)
    traces: Mapping[str, Trace] = {
        n: cut(read_rpc_trace(ref.path, ref.format, section.tenants[n]))
        for n, ref in inputs.traces.items()
    }
    return check_replay(replay_aequitas(plan, traces, names))
