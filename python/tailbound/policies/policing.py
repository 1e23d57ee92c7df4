"""Conformance policing: work beyond what a decision saw goes below every level.

An admission decision is made from a trace (an experiment's first half, a tenant's recorded
trace). SNC-Meister enforces priorities only (thesis §4.2), so when a tenant later sends more than
its decision trace did, the excess is queued at the tenant's level in front of every less
important tenant, whose bound assumed the tenant's *modelled* traffic: a promise made to one
tenant is broken by another tenant's change (docs/results-snc.md, Fig. 4.10: w028 in order 19,
150 ms SLO, 14 ms alone, 162 ms at its worst 3-minute window because w076 — a copy of wc62
trace 14 in the 60 ms class — sends 19% more request work and 30% more response work in its
second half, which misses *its own* SLO alone). Nothing taken from the decision trace can foresee
that change.

:class:`Policed` wraps an admission policy so that what it enforces also carries, per network
direction, one token bucket, the **load bucket** (:func:`load_bucket`): the decision trace's
long-run rate, sized to the largest backlog the trace builds at that rate (the low-rate end of its
r-b curve). Traffic over it is **demoted** below every level (PriorityMeister's enforcer, thesis
§2.2.1; the plan's limit mode ``demotion``), not delayed.

* The bounds are unchanged: the decision trace passes its load bucket (it lies on the trace's
  curve, so nothing is demoted) and the analysis described exactly that traffic; traffic beyond
  it moves below every level, where it can only delay another tenant by one packet's
  non-preemptive transmission (as any less important traffic can).
* What it costs falls on the tenant that changed: its own demoted requests wait behind
  everybody else's.

*Choice: one bucket, on the load.* SNC-Meister's analysis is stochastic: it describes a tenant
by a Markov-modulated process fitted to its decision trace, whose bursts of every length the
bounds already cover at their probabilities; what no stochastic bound covers is more *work* than
the model's mean rate carries. The load bucket demotes exactly the work beyond the decision
trace's cumulative load, on whatever time scale it arrives, and leaves bursts within it to the
priorities. PriorityMeister's three buckets (:data:`~tailbound.policies.dnc_baselines.PM_BUCKETS`,
the ``dnc`` baseline's, which a worst-case analysis needs) also police the *shape* of bursts: on
Fig. 4.10's 20 orders they removed w028's miss and caused one (w008, order 8: its second half's
bursts exceed its first half's medium-rate bucket; over the whole half 45.6 ms unpoliced,
62.2 ms with three buckets, 47.0 ms with the load bucket, against 60 ms). The link-rate bucket
alone left w028 at 162 ms; the two higher-rate buckets without the load bucket kept w008's miss.
With the load bucket alone no tenant missed through sharing in the 20 orders
(docs/results-snc.md, docs/snc.md).

*Choice: the network only.* Policing each storage tenant at its device too (its load bucket in
device-seconds on its storage r-b curve, demoted by the device's dispatcher) was measured on the
storage experiment (``snc_storage --tenants 62 --orders 5 --scale 7``, a one-off run with commit
0871211's device buckets set to the load bucket): 3 misses through sharing where the network alone
has none. Each is the tenant's own demotion: w041 in order 1 (SLO 70 ms, the most important level)
does the same device work in both halves but 2% of its second half's falls outside its device load
bucket; demoted at its own device alone it takes 94 ms, 41 ms otherwise. The device is each
server's bottleneck, so demoted work waits long below every level there, and the tenant's later
requests wait behind it (a tenant's requests are never reordered). The device is left to the
priorities.

tailbound's addition to SNC-Meister (not in the thesis, whose memcached traces were vetted for
stationarity). The bucket bounds each tenant's traffic by its own history, not by a margin: a
tenant that sends as its decision trace did is never demoted.
"""

from __future__ import annotations

from collections.abc import Sequence

from tailbound.characterize.rbcurve import RbCurve
from tailbound.model import Tenant
from tailbound.policies.admission import AdmissionPolicy, Bucket, Configured
from tailbound.policies.dnc_baselines import DIRECTIONS, CurveCache
from tailbound.snc.analysis import TenantBound


def load_bucket(curve: RbCurve) -> Bucket:
    """The token bucket that bounds a decision trace's load: its long-run rate and the largest
    backlog it builds at that rate (the low-rate end of its r-b curve; module docstring)."""
    return float(curve.rates[0]), float(curve.buckets[0])


class Policed:
    """``policy`` with each tenant's traffic over its decision trace's load bucket demoted
    (module docstring). ``curves`` holds the decision traces' r-b curves (an experiment primes
    it with first halves); the bounds, the screen and the levels are the wrapped policy's."""

    mode = "demotion"

    def __init__(self, policy: AdmissionPolicy, curves: CurveCache) -> None:
        self.policy = policy
        self.curves = curves
        self.analysis = policy.analysis
        self.worst_case = policy.worst_case
        if hasattr(policy, "newcomer_bound"):
            self.newcomer_bound = policy.newcomer_bound

    def configure(self, tenants: Sequence[Tenant]) -> list[Configured]:
        """The wrapped policy's levels and each tenant's load bucket per network direction (no
        pacing: its decision trace passes them; none at a device, module docstring)."""
        return [
            Configured(
                c.level,
                {d: (load_bucket(self.curves.curve(t, d)),) for d in DIRECTIONS},
                dict.fromkeys(DIRECTIONS, 0.0),
            )
            for t, c in zip(tenants, self.policy.configure(tenants), strict=True)
        ]

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        return self.policy(tenants)
