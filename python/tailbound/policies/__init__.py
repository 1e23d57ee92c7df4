"""Policies: who runs where, at which priority, with which rate limits.

- :mod:`tailbound.policies.registry` — every policy by name (the CLI, the experiments and the
  control plane build policies through it);
- :mod:`tailbound.policies.workloadcompactor` — WorkloadCompactor (thesis ch. 5) and
  :func:`~tailbound.policies.workloadcompactor.to_plan`;
- :mod:`tailbound.policies.wc_lp` — its per-server LP; :mod:`tailbound.policies.server` — the
  queues of a server and the latency check; :mod:`tailbound.policies.placement` — first-fit and
  fast-first-fit; :mod:`tailbound.policies.baselines` — effective bandwidth, k × average rate,
  knee of the r-b curve.
"""
