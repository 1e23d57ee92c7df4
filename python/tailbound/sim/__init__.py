"""The trace-driven simulator: scenarios, the Rust kernel's Python face, results and plots.

- :class:`Scenario` loads a TOML/JSON scenario and builds a :class:`Simulator`;
- :class:`Simulator` runs the Rust kernel (``run(until)``, ``set_param``, ``results()``);
- :class:`SimResults` / :class:`WorkloadResult` give latencies, stage times, percentiles,
  sliding-window tails and SLO checks;
- :func:`scenario_from_plan` turns a :class:`~tailbound.plan.Plan` into a scenario.
"""

from tailbound.sim.plan import scenario_from_plan
from tailbound.sim.results import SimResults, Slo, WorkloadResult, percentile
from tailbound.sim.scenario import Scenario
from tailbound.sim.simulator import Requests, Simulator, shape, single_queue

__all__ = [
    "Requests",
    "Scenario",
    "SimResults",
    "Simulator",
    "Slo",
    "WorkloadResult",
    "percentile",
    "scenario_from_plan",
    "shape",
    "single_queue",
]
