"""The Python face of the Rust simulation kernel (``crates/tailbound-core/src/sim``).

:class:`Simulator` takes the core's configuration as a plain dict (topology: links, devices,
schedulers; workloads: route and issue discipline) and each workload's requests as whole arrays
(:class:`Requests`), runs with ``run(until)`` and exposes the control hook ``set_param`` so a
policy (Cake, Aequitas, PSLO) can run a period, read :meth:`Simulator.results`, change weights,
priorities or limits and continue.

Example: two requests of 1 ms of work at a FIFO device, open loop.

>>> import numpy as np
>>> config = {"topology": {"devices": [{}]},
...           "workloads": [{"route": [{"device": 0}], "issue": "open"}]}
>>> req = Requests(arrival=np.array([0.0, 0.0]), op=np.zeros(2, np.uint8),
...                size=np.zeros(2), cost=[np.array([0.001, 0.001])])
>>> sim = Simulator(config, [req], names=["A"], stage_names=[("storage",)])
>>> sim.run()
>>> sim.results()["A"].latency.round(6).tolist()
[0.001, 0.002]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound import _core
from tailbound.sim.results import ControlLog, SimResults, Slo, WorkloadResult


@dataclass(frozen=True)
class Requests:
    """One workload's requests as columns.

    ``arrival`` in seconds (non-decreasing; for a closed-loop workload only the first matters),
    ``op`` 0 read / 1 write, ``size`` in bytes (counts against a device's outstanding-bytes limit),
    and per stage of the route one ``cost`` array: message bytes for a network stage, seconds of
    work for a device stage. ``offset`` (bytes on the device, optional) is read only by a disk's
    rule for sequential writes (``docs/simulator.md``). ``classes`` (optional) is each request's
    own class at every queue it crosses, an index of the queues' classes (``NO_CLASS``: the
    class its queue gives its workload); only the kinds with classes read it (``dwrr``).
    ``deadline_s`` (optional) is each request's own deadline in seconds after its issue (``inf``:
    none); ``edf`` serves by it (``tailbound_core::sched``, "An item").
    """

    arrival: NDArray[np.float64]
    op: NDArray[np.uint8]
    size: NDArray[np.float64]
    cost: Sequence[NDArray[np.float64]] = field(default_factory=list)
    offset: NDArray[np.float64] | None = None
    classes: NDArray[np.uint32] | None = None
    deadline_s: NDArray[np.float64] | None = None


#: A request's class when it has none of its own (``tailbound_core::sched::NO_CLASS``).
NO_CLASS = 2**32 - 1


def _f64(a: Any) -> NDArray[np.float64]:
    return np.ascontiguousarray(a, dtype=np.float64)


def _u32(a: Any) -> NDArray[np.uint32]:
    if a is None:
        return np.zeros(0, dtype=np.uint32)
    a = np.asarray(a)
    if a.size and (a.dtype.kind not in "iu" or a.min() < 0 or a.max() > NO_CLASS):
        raise ValueError(f"classes must be integers in [0, {NO_CLASS}], got {a.dtype} values")
    return np.ascontiguousarray(a, dtype=np.uint32)


class Simulator:
    """A configured simulation (see the module docstring for the configuration's form).

    ``queues`` maps names (``"server0.ingress"``, ``"ssd0"``) to ``("link" | "device", index)`` so
    that :meth:`set_param` can name a queue; indices work too.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        requests: Sequence[Requests],
        *,
        names: Sequence[str],
        stage_names: Sequence[Sequence[str]],
        slos: Sequence[Slo | None] | None = None,
        queues: Mapping[str, tuple[str, int]] | None = None,
    ) -> None:
        self.names = list(names)
        self.stage_names = [tuple(s) for s in stage_names]
        self.slos = list(slos) if slos is not None else [None] * len(self.names)
        self.queues = dict(queues or {})
        named = {i: n for n, (kind, i) in self.queues.items() if kind == "device"}
        #: Devices with a controller, by name (``device <i>`` when unnamed) and index.
        self.controlled = {
            named.get(i, f"device {i}"): i
            for i, d in enumerate(config.get("topology", {}).get("devices", []))
            if d.get("control")
        }
        try:
            self._core = _core.Simulation(
                json.dumps(config),
                [_f64(r.arrival) for r in requests],
                [np.ascontiguousarray(r.op, dtype=np.uint8) for r in requests],
                [_f64(r.size) for r in requests],
                [[_f64(c) for c in r.cost] for r in requests],
                [_f64(r.offset if r.offset is not None else ()) for r in requests],
                [_u32(r.classes) for r in requests],
                [_f64(r.deadline_s if r.deadline_s is not None else ()) for r in requests],
            )
        except ValueError as e:
            raise ValueError(self.named(str(e))) from None

    def named(self, message: str) -> str:
        """The core's ``message`` with workloads by name, not index.

        >>> s = Simulator.__new__(Simulator); s.names = ["A", "B"]
        >>> s.named("workload 1, request 0: too big; workload 7")
        "workload 'B', request 0: too big; workload 7"
        """

        def name(match: re.Match[str]) -> str:
            i = int(match[1])
            return f"workload {self.names[i]!r}" if i < len(self.names) else match[0]

        return re.sub(r"\bworkload (\d+)\b", name, message)

    def run(self, until: float = float("inf")) -> None:
        """Process every event up to ``until`` seconds of simulated time."""
        self._core.run(float(until))

    @property
    def now(self) -> float:
        """Simulated time in seconds."""
        return float(self._core.now)

    @property
    def events(self) -> int:
        """Events processed so far."""
        return int(self._core.events)

    def set_param(
        self,
        queue: str | tuple[str, int],
        workload: str | int,
        name: str,
        value: float | Sequence[tuple[float, float]],
    ) -> None:
        """Change a workload's scheduler parameter at a queue, effective now.

        ``name`` is ``"priority"`` (int, larger is more important), ``"weight"``, ``"deadline"``
        (seconds) or ``"buckets"`` (a list of ``(rate, size_s)`` pairs; empty means unlimited).

        The periodic control hook: run a period, read the results, change, continue.

        >>> sim = single_queue([np.zeros(4), np.zeros(4)], [np.ones(4), np.ones(4)],
        ...                    scheduler={"kind": "priority", "priority": [1, 0]},
        ...                    names=["A", "B"])
        >>> sim.run(1.5)                      # A's first request done, A's second in service
        >>> sim.set_param("device", "B", "priority", 2)
        >>> sim.run()
        >>> sim.results()["B"].latency.tolist()  # B overtakes A's remaining two requests
        [3.0, 4.0, 5.0, 6.0]
        """
        kind, index = self.queues[queue] if isinstance(queue, str) else queue
        w = self.names.index(workload) if isinstance(workload, str) else int(workload)
        if name == "buckets":
            if isinstance(value, int | float):
                raise TypeError("buckets take a list of (rate, size_s) pairs")
            values = [float(x) for pair in value for x in pair]
        else:
            if not isinstance(value, int | float):
                raise TypeError(f"{name} takes one number")
            values = [float(value)]
        self._core.set_param(kind, int(index), w, name, values)

    def control_log(self, device: str | int) -> ControlLog:
        """The limits device ``device``'s controller applied so far (a name of ``queues`` or
        an index; empty without a controller)."""
        index = self.queues[device][1] if isinstance(device, str) else int(device)
        time, workload, rate, depth = self._core.control_log(index)
        return ControlLog(time, tuple(self.names[int(w)] for w in workload), rate, depth)

    def results(self) -> SimResults:
        """Every workload's records so far."""
        issue, exit_flat, stages = self._core.records()
        exit_ = exit_flat.reshape(-1, stages)
        out = []
        for w, (a, b) in enumerate(self._core.workload_ranges()):
            out.append(
                WorkloadResult(
                    name=self.names[w],
                    stages=self.stage_names[w],
                    issue=issue[a:b],
                    exit=exit_[a:b],
                    slo=self.slos[w],
                )
            )
        control = {name: self.control_log(i) for name, i in self.controlled.items()}
        return SimResults(workloads=tuple(out), events=self.events, now=self.now, control=control)


def shape(
    arrival: NDArray[np.float64], cost: NDArray[np.float64], buckets: Sequence[tuple[float, float]]
) -> NDArray[np.float64]:
    """Release times of a FIFO token-bucket shaper (requests need room in every bucket).

    ``cost`` is each request's tokens (seconds of work), buckets are ``(rate, size_s)``.

    >>> shape(np.array([0.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0]), [(0.5, 2.0)]).tolist()
    [0.0, 0.0, 2.0]
    """
    return _core.shape(_f64(arrival), _f64(cost), [(float(r), float(b)) for r, b in buckets])


def single_queue(
    arrivals: Sequence[NDArray[np.float64]],
    work: Sequence[NDArray[np.float64]],
    *,
    scheduler: Mapping[str, Any] | None = None,
    mpl: int = 1,
    names: Sequence[str] | None = None,
    slos: Sequence[Slo | None] | None = None,
    control: Mapping[str, Any] | None = None,
) -> Simulator:
    """One device queue shared by several open-loop workloads: the queueing-theory setting.

    Workload ``i`` issues requests at ``arrivals[i]`` needing ``work[i]`` seconds of service each;
    the device serves up to ``mpl`` at once (processor sharing) in the order of ``scheduler`` (the
    core's scheduler config, default FIFO). The stage time of each request is its queueing plus
    service time. ``control`` is the device's controller in the core's form
    (``tailbound_core::sim::control::ControlSpec``, workloads by index; ``docs/pslo.md``).

    >>> sim = single_queue([np.array([0.0, 0.5])], [np.array([1.0, 1.0])])
    >>> sim.run()
    >>> sim.results().workloads[0].latency.tolist()
    [1.0, 1.5]

    PSLO's ``L`` holds a workload with a latency SLO to depth 1: four requests at once at an
    MPL-4 device run one after the other instead of sharing it.

    >>> pslo = {"kind": "pslo", "policy": "L", "tenants": [{"workload": 0, "latency_s": 0.5,
    ...         "percentile": 0.99, "throughput_iops": 1.0}]}
    >>> sim = single_queue([np.zeros(4)], [np.ones(4)], mpl=4, control=pslo)
    >>> sim.run()
    >>> sim.results().workloads[0].latency.tolist()
    [1.0, 2.0, 3.0, 4.0]
    >>> sim.results().control["device"].depth.tolist()
    [1.0]
    """
    n = len(arrivals)
    names = list(names) if names is not None else [f"w{i}" for i in range(n)]
    config = {
        "topology": {
            "devices": [
                {
                    "read_mpl": mpl,
                    "write_mpl": mpl,
                    "scheduler": dict(scheduler or {"kind": "fifo"}),
                    **({"control": dict(control)} if control is not None else {}),
                }
            ]
        },
        "workloads": [{"route": [{"device": 0}], "issue": "open"}] * n,
    }
    requests = [
        Requests(
            arrival=_f64(a), op=np.zeros(len(a), np.uint8), size=np.zeros(len(a)), cost=[_f64(w)]
        )
        for a, w in zip(arrivals, work, strict=True)
    ]
    return Simulator(
        config,
        requests,
        names=names,
        stage_names=[("storage",)] * n,
        slos=slos,
        queues={"device": ("device", 0)},
    )
