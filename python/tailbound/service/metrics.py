"""The control plane's Prometheus metrics (``GET /metrics``, no token needed).

One :class:`Metrics` per application, on its own registry (two servers in one process, as the
tests run, do not share counters):

- ``tailbound_decisions_total{cluster, event, outcome}``: admissions (``admitted`` or
  ``rejected``) and departures decided and committed;
- ``tailbound_decision_seconds{event}``: a decision's latency, from the request to its commit
  (waiting for the cluster's lock included);
- ``tailbound_decision_retries_total{cluster}``: decisions recomputed because another server
  published a Plan version first (:mod:`tailbound.service.admission`);
- ``tailbound_plan_version{cluster}``: the current Plan version;
- ``tailbound_agent_last_contact_seconds{host}``: Unix time of each agent's last request;
- ``tailbound_trace_uploads_total{outcome}``: trace uploads stored or refused.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

#: Decision latency buckets (s): 1 ms to 1 min.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """The metrics of one application (module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.decisions = Counter(
            "tailbound_decisions",
            "Decisions committed",
            ["cluster", "event", "outcome"],
            registry=r,
        )
        self.latency = Histogram(
            "tailbound_decision_seconds", "Decision latency", ["event"], buckets=BUCKETS, registry=r
        )
        self.retries = Counter(
            "tailbound_decision_retries",
            "Decisions recomputed on a newer Plan",
            ["cluster"],
            registry=r,
        )
        self.plan_version = Gauge(
            "tailbound_plan_version", "Current Plan version", ["cluster"], registry=r
        )
        self.agent_contact = Gauge(
            "tailbound_agent_last_contact_seconds",
            "Unix time of an agent's last request",
            ["host"],
            registry=r,
        )
        self.uploads = Counter("tailbound_trace_uploads", "Trace uploads", ["outcome"], registry=r)

    def exposition(self) -> bytes:
        """The text exposition format of every metric."""
        return generate_latest(self.registry)
