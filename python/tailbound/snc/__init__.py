"""Stochastic network calculus (SNC) and SNC-Meister (thesis ch. 4 and Appendix A).

* :mod:`~tailbound.snc.bounds` — MGF bounds ``(rho(theta), sigma(theta))`` and the operators
  (leftover, output, aggregate, convolution) in independent and Hölder-dependent forms;
* :mod:`~tailbound.snc.latency` — the latency operator and its ``theta`` / Hölder search;
* :mod:`~tailbound.snc.mmpp` — Markov-modulated arrivals fitted to traces;
* :mod:`~tailbound.snc.network` — SNC-Meister's two-hop analysis, SNC hop-by-hop and SNC
  convolution;
* :mod:`~tailbound.snc.tenants`, :mod:`~tailbound.snc.analysis`,
  :mod:`~tailbound.policies.admission` — tenants files, per-tenant bounds and admission control.
"""

from tailbound.snc.bounds import (
    STEP_S,
    Aggregate,
    ConstantService,
    Convolution,
    Leftover,
    Output,
    aggregate_all,
)
from tailbound.snc.latency import LatencyBound, latency_bound
from tailbound.snc.mmpp import MmppArrival, MmppModel, fit_mmpp

__all__ = [
    "STEP_S",
    "Aggregate",
    "ConstantService",
    "Convolution",
    "LatencyBound",
    "Leftover",
    "MmppArrival",
    "MmppModel",
    "Output",
    "aggregate_all",
    "fit_mmpp",
    "latency_bound",
]
