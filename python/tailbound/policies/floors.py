"""Measured floors: latencies replayed in the simulator that no prediction may go under.

**Alone.** A tenant's request latency on the network can only grow when other tenants share its
links: its links are work-conserving and FIFO within a priority level, so traffic of the same or a
higher level only adds queueing, and lower levels add at most the non-preemptive blocking of one
packet. The latency its own trace gets *alone* — replayed open loop through its four links (client
egress and server ingress for the request, server egress and client ingress for the response) in
the simulator, nothing else present — is therefore a lower bound on its latency in any network, at
every percentile (per request, as the SLO is counted).

An analysis whose arrival model does not fit the trace can predict less than that. SNC-Meister's
reference MMPP (1 s intervals, Poisson arrivals and exponential work within a state) smooths the
sub-second runs of large writes of block-storage traces: on the wc62 traces its bound of a tenant
alone is up to 10× below the measured latency alone (docs/results-snc.md, "Why SNC-Meister
misses"). :class:`AloneFloor` wraps a policy so that every tenant's predicted latency is at least
its measured latency alone at its percentile (``TenantBound.latency_alone_s`` records it). This is
tailbound's addition to SNC-Meister's admission (not in the thesis): it rejects a tenant whose own
bursts already miss its SLO, which the model would admit. It never lowers a bound, so a guarantee
of the wrapped analysis is kept. The DNC baselines do not need it: their worst-case bounds of the
same trace are never below its latency alone (tested against the simulator in
``tests/policies/test_dnc_baselines.py``).

**Together.** A tenant's bursts can also queue behind its neighbours' bursts, and the reference
MMPP smooths both (docs/results-snc.md, Fig. 4.10: w121, admitted at 52.5 ms, takes 81.1 ms when
the admitted tenants' decision traces are replayed together). :class:`JointFloor` closes that gap
on the decision's own data: for a set of tenants it replays all their traces together — the plan
the wrapped policy would enforce for them, open loop — and raises each tenant's predicted latency
to its measured latency at its percentile (``TenantBound.latency_joint_s``). An admission decided
with it never promises an SLO that the traces it was decided from already break with the tenants
it admits. Opt-in, because it costs one replay per admission check (a few seconds for ~100 tenants
of 300 s block traces); skipped when the wrapped bounds already reject the set (the decision is
the same, and those bounds are returned unfloored). What it cannot do is see the future: behaviour
absent from the decision traces (a larger burst later on) is still up to the analysis.

**Split levels.** Priorities by SLO put tenants of one SLO class in one FIFO level, so a
classmate's burst that its decision trace did not contain is queued in front of every request of
the class (Fig. 4.10, order 3: w078, 0.6 ms alone, takes 62.4 ms against its 60 ms SLO because
w138, a copy of wc62 trace 14 on the same client host and class, has a 69 ms write burst in its
second half; without w138 it takes 0.7 ms). With ``split_levels`` (:class:`AloneFloor`), each
level ``L`` of the wrapped policy is enforced as two: ``2L`` for the tenants whose measured
latency alone is within the analysis' bound alone, ``2L + 1`` for the others (the *misfits*,
whose own bursts the arrival model cannot express: their floor binds). Every bound stays valid
without re-analysis, because the SNC analyses count flows of *equal* priority as higher: a
tenant at ``2L`` now has fewer flows ahead than its bound assumed, one at ``2L + 1`` exactly
those it assumed (all of level ``L`` and above), and no flow of another class changes side. The
bursts the model misses then queue behind the traffic it describes instead of in front of it.
Decided from the first half only; it changes what is enforced, not who is admitted. *Choice:* the
most important levels are split first, as many as the enforcers' levels hold
(:data:`~tailbound.plan.TENANT_LEVELS`, 7: ``tailbound enforce net`` keeps HTB's last priority for
best-effort and demoted traffic, and refuses a plan that uses it): 3 SLO classes become 6 levels,
4 become 7 with the least important class unsplit, 7 or more keep their levels by SLO. (Until
this choice all 4 classes were split into 8 levels, a plan ``enforce net`` refused.)

**Model error (opt-in).** ``max(bound, alone)`` drops the queueing behind neighbours that the
bound predicts as soon as the floor binds: a misfit whose own bursts take 48 ms alone against a
60 ms SLO is admitted at 48 ms whatever its neighbours (Fig. 4.10, order 12: w059, 63 ms on the
replayed second half, which it meets alone). With ``add_model_error`` the prediction is also at
least ``bound + (alone − model alone)``: the analysis' bound among the others, corrected by the
error it makes on the tenant alone (its measured latency alone minus its bound alone, both from
the decision trace). Tenants the analysis over-predicts alone are unchanged.

**At the device.** Given the SSD profile (:class:`AloneFloor`'s ``profile``; the admission
policies pass the tenants file's), a tenant with a device is replayed alone through its network
links *and* its device, under the plan's dispatch rule (nothing less important joins a request in
service), so the floor includes the device's service of the tenant's own bursts. Without a
profile, and always for :class:`JointFloor`, the replay is of the network path only (still a
lower bound: the device stage only adds to it). Replays go through
:func:`~tailbound.policies.admission.network_plan` and the one scenario builder,
:mod:`tailbound.sim.plan`. Policies may run the
simulator; the analysis (``snc``, ``dnc``) may not, which is why the floors live here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.model import DEFAULT_LINK_BYTES_PER_S, Tenant
from tailbound.plan import TENANT_LEVELS
from tailbound.policies.admission import WIRE, AdmissionPolicy, Configured, Wire, network_plan
from tailbound.sim.plan import replay_results as sim_replay_results
from tailbound.sim.results import WorkloadResult, percentile
from tailbound.snc.analysis import TenantBound
from tailbound.traces.trace import Trace


def replay_results(
    tenants: Sequence[Tenant],
    traces: Sequence[Trace],
    configured: Sequence[Configured],
    *,
    link_bytes_per_s: float = DEFAULT_LINK_BYTES_PER_S,
    mode: str = "shaping",
    wire: Wire = WIRE,
    profile: Path | None = None,
) -> dict[str, WorkloadResult]:
    """Each tenant's requests (issue times, latencies) when ``traces`` are replayed together
    open loop, each tenant enforced as ``configured`` with rate limiters in ``mode``: on the
    network only, or with ``profile`` (an SSD profile) also through the devices of the tenants
    that have one, under the plan's dispatch rule (:func:`network_plan`)."""
    plan = network_plan(
        "replay",
        tenants,
        configured,
        link_bytes_per_s=link_bytes_per_s,
        mode=mode,
        network_only=profile is None,
    )
    return sim_replay_results(
        plan,
        {t.name: tr for t, tr in zip(tenants, traces, strict=True)},
        link_bandwidth_bytes_per_s=link_bytes_per_s,
        mtu_bytes=wire.mtu_bytes,
        propagation_s=wire.propagation_s,
        profile=profile,
    )


def replay(
    tenants: Sequence[Tenant],
    traces: Sequence[Trace],
    configured: Sequence[Configured],
    **network: Any,
) -> dict[str, NDArray[np.float64]]:
    """Each tenant's request latencies (s) in :func:`replay_results`."""
    results = replay_results(tenants, traces, configured, **network)
    return {name: np.asarray(r.latency) for name, r in results.items()}


def replayed(
    tenants: Sequence[Tenant],
    traces: Sequence[Trace],
    configured: Sequence[Configured],
    **network: Any,
) -> list[float]:
    """Each tenant's latency (s) at its own percentile in :func:`replay`."""
    latencies = replay(tenants, traces, configured, **network)
    return [percentile(latencies[t.name], t.percentile) for t in tenants]


def alone_result(
    spec: Tenant, trace: Trace, link_bytes_per_s: float, profile: Path | None = None
) -> WorkloadResult:
    """``spec``'s requests when ``trace`` is replayed with nothing else on the network (host
    links of ``link_bytes_per_s`` bytes per second) and, given ``profile`` and a device, nothing
    else on its device."""
    results = replay_results(
        [spec], [trace], [Configured(0)], link_bytes_per_s=link_bytes_per_s, profile=profile
    )
    return results[spec.name]


def alone_latency(
    spec: Tenant, trace: Trace, link_bytes_per_s: float, profile: Path | None = None
) -> float:
    """``spec``'s latency (s) at its percentile in :func:`alone_result`."""
    return alone_result(spec, trace, link_bytes_per_s, profile).percentile(spec.percentile)


class _Wrapper:
    """Forwards what a floor does not change: the analysis, the enforcement, the screen."""

    def __init__(self, policy: AdmissionPolicy) -> None:
        self.policy = policy
        self.analysis = policy.analysis
        self.mode = policy.mode
        self.worst_case = policy.worst_case

    def configure(self, tenants: Sequence[Tenant]) -> list[Configured]:
        return self.policy.configure(tenants)


def split_class_levels(levels: Sequence[int], misfits: Sequence[bool], available: int) -> list[int]:
    """Split levels (module docstring): each of the ``k`` most important of the ``n`` levels
    ``levels`` uses (``k = min(n, available − n)``) becomes two, ``2L`` for the described
    tenants and ``2L + 1`` for the ``misfits``; a level ``L ≥ k`` becomes ``L + k``.

    >>> split_class_levels([0, 1, 2, 3], [True, True, False, True], 7)  # 4 levels in 7: 3 split
    [1, 3, 4, 6]
    >>> split_class_levels([0, 1, 1], [False, True, False], 7)  # 2 levels: both split
    [0, 3, 2]
    >>> split_class_levels([0, 6], [True, True], 7)  # 7 levels in 7: none split
    [0, 6]
    """
    n = max(levels) + 1
    k = max(0, min(n, available - n))
    return [2 * v + int(m) if v < k else v + k for v, m in zip(levels, misfits, strict=True)]


class AloneFloor(_Wrapper):
    """An admission policy predicting ``max(bound, latency alone)`` for every tenant (module
    docstring).

    ``trace_of`` gives the trace a tenant's decision is made from (``FitCache.trace``: its file,
    or the first half of a trace an experiment primed). Latencies alone are measured once per
    (trace, percentile) and kept in ``alone`` (pass the same dictionary to share them between
    wrappers, e.g. over the arrival orders of an experiment). ``newcomer_bound`` (the admission
    screen) is kept when the wrapped policy has it. With ``profile`` (the SSD profile), a tenant
    with a device is measured through its device too (module docstring, "At the device");
    without, on the network only.

    ``split_levels`` also changes what is enforced (:meth:`configure`, module docstring, "Split
    levels"): within each level of the wrapped policy, the tenants the analysis under-predicts
    alone (:meth:`misfit`) run one sub-level below the others. Decisions are unchanged.

    ``add_model_error`` predicts ``max(bound, alone, bound + alone − model alone)``: a misfit's
    bound among others is raised by what the analysis under-predicts it alone (module
    docstring, "Model error"). ``window_floor`` measures the latency alone as the SLO is judged
    over 3-minute windows: the worst window's percentile (:meth:`WorkloadResult.judged`).
    """

    def __init__(
        self,
        policy: AdmissionPolicy,
        trace_of: Callable[[Tenant], Trace],
        link_bytes_per_s: float,
        alone: dict[tuple[str, float], float] | None = None,
        *,
        split_levels: bool = False,
        levels: int = TENANT_LEVELS,
        profile: Path | None = None,
        add_model_error: bool = False,
        window_floor: bool = False,
    ) -> None:
        super().__init__(policy)
        self.window_floor = window_floor
        self.trace_of = trace_of
        self.link_bytes_per_s = link_bytes_per_s
        self.alone = {} if alone is None else alone
        self.profile = profile
        self.split_levels = split_levels
        self.levels = levels
        self.add_model_error = add_model_error
        self.models_alone: dict[tuple[str, float], float] = {}
        if hasattr(policy, "newcomer_bound"):
            self.newcomer_bound = self._newcomer_bound

    def model_alone(self, spec: Tenant) -> float:
        """The wrapped analysis' bound (s) of ``spec`` *alone*, memoised per (trace,
        percentile)."""
        key = (str(spec.trace), spec.percentile)
        if key not in self.models_alone:
            (alone_bound,) = self.policy([spec])
            self.models_alone[key] = alone_bound.latency_s
        return self.models_alone[key]

    def misfit(self, spec: Tenant) -> bool:
        """Whether the wrapped analysis' bound of ``spec`` alone is below its measured latency
        alone (its arrival model cannot express the tenant's own bursts)."""
        return self.latency_alone(spec) > self.model_alone(spec)

    def configure(self, tenants: Sequence[Tenant]) -> list[Configured]:
        """What the wrapped policy enforces; with ``split_levels``, level ``L`` becomes ``2L`` for
        the tenants the analysis describes and ``2L + 1`` for its misfits, for as many of the
        most important levels as ``levels`` holds (module docstring, "Split levels"); the
        levels below them keep one level each (:func:`split_class_levels`)."""
        base = self.policy.configure(tenants)
        if not self.split_levels or not base:
            return base
        levels = split_class_levels(
            [c.level for c in base], [self.misfit(t) for t in tenants], self.levels
        )
        return [dataclasses.replace(c, level=v) for c, v in zip(base, levels, strict=True)]

    def _alone_key(self, spec: Tenant) -> tuple[str, float]:
        """The key of ``spec``'s latency alone in ``alone``."""
        profile = self.profile if spec.device is not None else None
        return (
            str(spec.trace)
            + (f"|{spec.device}" if profile else "")
            + ("|window" if self.window_floor else ""),
            spec.percentile,
        )

    def remember_alone(self, spec: Tenant, latency_s: float) -> None:
        """Take ``latency_s`` as ``spec``'s latency alone (s), as :meth:`latency_alone` measured
        it before (a control-plane engine restored from its snapshot, whose bounds carry it:
        ``TenantBound.latency_alone_s``), so it is not measured again."""
        self.alone.setdefault(self._alone_key(spec), latency_s)

    def latency_alone(self, spec: Tenant) -> float:
        """``spec``'s measured latency alone (s) at its percentile, memoised: over the whole
        trace, or with ``window_floor`` the worst over SNC-Meister's 3-minute windows."""
        profile = self.profile if spec.device is not None else None
        key = self._alone_key(spec)
        if key not in self.alone:
            result = alone_result(spec, self.trace_of(spec), self.link_bytes_per_s, profile)
            judged = result.judged(spec.percentile)
            self.alone[key] = judged.window_s if self.window_floor else judged.whole_s
        return self.alone[key]

    def floor(self, spec: Tenant, bound: TenantBound) -> TenantBound:
        """``bound`` raised to ``spec``'s latency alone (unchanged if already above it); with
        ``add_model_error``, ``bound`` plus the analysis' error alone (module docstring)."""
        alone = self.latency_alone(spec)
        latency = max(bound.latency_s, alone)
        if self.add_model_error:
            latency = max(latency, bound.latency_s + alone - self.model_alone(spec))
        return dataclasses.replace(bound, latency_s=latency, latency_alone_s=alone)

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        return [self.floor(t, b) for t, b in zip(tenants, self.policy(tenants), strict=True)]

    def _newcomer_bound(self, tenants: Sequence[Tenant]) -> TenantBound:
        screen = self.policy.newcomer_bound  # type: ignore[attr-defined]
        return self.floor(tenants[-1], screen(tenants))


class JointFloor(_Wrapper):
    """An admission policy predicting ``max(bound, latency measured replaying the tenants
    together)`` (module docstring).

    ``trace_of`` gives the trace a tenant's decision is made from (``FitCache.trace``). The
    wrapped policy's ``newcomer_bound`` screen is kept when it has one: a newcomer it rejects
    is rejected without a replay.
    """

    def __init__(
        self,
        policy: AdmissionPolicy,
        trace_of: Callable[[Tenant], Trace],
        link_bytes_per_s: float,
    ) -> None:
        super().__init__(policy)
        self.trace_of = trace_of
        self.link_bytes_per_s = link_bytes_per_s
        self.replays = 0  # replays run so far (they are the cost of this floor)
        if hasattr(policy, "newcomer_bound"):
            self.newcomer_bound = policy.newcomer_bound

    def measured(self, tenants: Sequence[Tenant]) -> list[float]:
        """Each tenant's latency (s) at its percentile when ``tenants`` are replayed together,
        enforced as the wrapped policy would enforce them."""
        self.replays += 1
        return replayed(
            tenants,
            [self.trace_of(t) for t in tenants],
            self.configure(tenants),
            link_bytes_per_s=self.link_bytes_per_s,
            mode=self.mode,
        )

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        bounds = self.policy(tenants)
        if not all(b.meets_slo for b in bounds):
            return bounds
        return [
            dataclasses.replace(b, latency_s=max(b.latency_s, m), latency_joint_s=m)
            for b, m in zip(bounds, self.measured(tenants), strict=True)
        ]
