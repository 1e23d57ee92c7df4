"""Conformance policing: traffic beyond what a decision saw goes below every level.

An admission decision is made from a trace (an experiment's first half, a tenant's recorded
trace). SNC-Meister enforces priorities only (thesis §4.2), so when a tenant later sends a burst
its decision trace did not contain, that burst is queued at the tenant's level in front of every
less important tenant, whose bound assumed the tenant's *modelled* traffic: a promise made to one
tenant is broken by another tenant's change (docs/results-snc.md, Fig. 4.10: w028 in order 19,
150 ms SLO, 14 ms alone, 162 ms at its worst 3-minute window because w076 — a copy of wc62
trace 14 in the 60 ms class — has a write burst in its second half that misses *its own* SLO
alone; 38.6 ms without w076). Nothing taken from the decision trace can foresee that burst.

:class:`Policed` wraps an admission policy so that what it enforces also carries, per direction
(and, for a tenant with a device when the tenants file has an SSD profile, at its device, in
device-seconds), token buckets that the tenant's decision trace passes undelayed —
PriorityMeister's multiple rate limits on the trace's r-b curve
(:func:`~tailbound.policies.prioritymeister.rate_limits`,
:data:`~tailbound.policies.dnc_baselines.PM_BUCKETS` buckets, the same buckets the ``dnc``
baseline enforces) — with traffic over them **demoted** below every level (PriorityMeister's
enforcer, thesis §2.2.1; the plan's limit mode ``demotion``), not delayed.

* The bounds are unchanged: on its decision trace a tenant's traffic passes its buckets (they
  lie on the curve, so nothing is demoted) and the analysis described exactly that traffic;
  later traffic within the buckets is what the analysis was asked about, and traffic beyond
  them moves below every level, where it can only delay another tenant by one packet's
  non-preemptive transmission (as any less important traffic can).
* What it costs falls on the tenant that changed: its own demoted requests wait behind
  everybody else's.

tailbound's addition to SNC-Meister (not in the thesis, whose memcached traces were vetted for
stationarity). The buckets bound each tenant's traffic by its own history, not by a margin: a
tenant that sends as its decision trace did is never demoted.
"""

from __future__ import annotations

from collections.abc import Sequence

from tailbound.model import Tenant
from tailbound.policies.admission import AdmissionPolicy, Configured
from tailbound.policies.dnc_baselines import DIRECTIONS, STORAGE, CurveCache
from tailbound.snc.analysis import TenantBound


class Policed:
    """``policy`` with each tenant's traffic over its decision trace's buckets demoted (module
    docstring). ``curves`` holds the decision traces' r-b curves (an experiment primes it with
    first halves); the bounds, the screen and the levels are the wrapped policy's."""

    mode = "demotion"

    def __init__(self, policy: AdmissionPolicy, curves: CurveCache) -> None:
        self.policy = policy
        self.curves = curves
        self.analysis = policy.analysis
        self.worst_case = policy.worst_case
        if hasattr(policy, "newcomer_bound"):
            self.newcomer_bound = policy.newcomer_bound

    def configure(self, tenants: Sequence[Tenant]) -> list[Configured]:
        """The wrapped policy's levels, each tenant's buckets per direction and, for a tenant
        with a device when the tenants have an SSD profile, at its device (device-seconds; no
        pacing: its decision trace passes them)."""
        device = self.curves.tset.ssd_profile is not None
        return [
            Configured(
                c.level,
                {
                    d: self.curves.rate_limits(t, d)
                    for d in (*DIRECTIONS, *((STORAGE,) if device and t.device else ()))
                },
                dict.fromkeys(DIRECTIONS, 0.0),
            )
            for t, c in zip(tenants, self.policy.configure(tenants), strict=True)
        ]

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        return self.policy(tenants)
