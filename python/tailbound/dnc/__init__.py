"""Deterministic network calculus (thesis §3.2.3, §5.2.1; Le Boudec & Thiran).

- :mod:`tailbound.dnc.curves` — piecewise-linear curves: token buckets, their minimum (concave
  arrival curves), rate-latency and convex service curves.
- :mod:`tailbound.dnc.operators` — min, sum, min-plus convolution and deconvolution, horizontal
  and vertical deviation, static-priority leftover service, output bound.
- :mod:`tailbound.dnc.bounds` — the static-priority delay bound (Eq. 5.1), its multi-stage sum
  (Eq. 5.5) and relaxation (Eq. 5.6), a two-hop path, the delay in a token-bucket shaper, a
  tenant's total latency.
- :mod:`tailbound.dnc.htb` — the delay at links served as Linux HTB serves them (strict
  priority between levels, round robin within one, several buckets per flow), one queue or a
  feed-forward path of them.
- :mod:`tailbound.dnc.nested` — the capacity with which EDF meets the nested classes of one
  Nested QoS workload or several (Wang's thesis §3.2.2, Lemmas 1 and 3).
- :mod:`tailbound.dnc.wfq_delay` — Aequitas' closed forms: the worst-case delays of two WFQ
  classes under a bursty load (Eq. 1 and 8), the no-inversion condition, the admissible region,
  the guaranteed admitted share.
"""

from tailbound.dnc.bounds import (
    Hop,
    StageLoad,
    StageShaping,
    multi_stage_delay,
    rb_arrival_curve,
    relaxed_multi_stage_delay,
    shaper_delay,
    static_priority_delay,
    static_priority_delay_general,
    tenant_latency,
    two_hop_delay,
)
from tailbound.dnc.curves import (
    Curve,
    RateLatency,
    TokenBucket,
    constant_rate,
    convex_service,
    curve_sum,
    token_bucket_min,
)
from tailbound.dnc.htb import HtbFlow, path_delays, queue_delays, round_robin_delay
from tailbound.dnc.nested import many_workload_capacity, single_workload_capacity
from tailbound.dnc.operators import (
    aggregate,
    convolution,
    curve_max,
    curve_min,
    deconvolution,
    horizontal_deviation,
    leftover,
    output_bound,
    vertical_deviation,
)

__all__ = [
    "Curve",
    "Hop",
    "HtbFlow",
    "RateLatency",
    "StageLoad",
    "StageShaping",
    "TokenBucket",
    "aggregate",
    "constant_rate",
    "convex_service",
    "convolution",
    "curve_max",
    "curve_min",
    "curve_sum",
    "deconvolution",
    "horizontal_deviation",
    "leftover",
    "many_workload_capacity",
    "multi_stage_delay",
    "output_bound",
    "path_delays",
    "queue_delays",
    "rb_arrival_curve",
    "relaxed_multi_stage_delay",
    "round_robin_delay",
    "shaper_delay",
    "single_workload_capacity",
    "static_priority_delay",
    "static_priority_delay_general",
    "tenant_latency",
    "token_bucket_min",
    "two_hop_delay",
    "vertical_deviation",
]
