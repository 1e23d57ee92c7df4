"""Where a scenario's workload traces come from: a trace file, or a synthetic generator so that
examples run on a fresh clone without the shared data.

``{"path": "trace0001.txt", "format": "wc"}`` reads a file (relative paths are relative to the
scenario file). ``{"synthetic": {"kind": "poisson", "rate": 200, "duration_s": 60, "seed": 1}}``
generates Poisson arrivals with ``tailbound.traces.synthetic`` (optional ``size_bytes`` default
4096, ``read_fraction`` default 1.0);
``{"synthetic": {"kind": "onoff", "rate": 200, "c2": 20, ...}}`` generates on/off bursts with
inter-arrival C² ``c2``; both take ``span_bytes`` (random offsets in a volume of that size, or
sequential runs with ``mean_run_length``) for disk models.
``{"synthetic": {"kind": "sequential", "requests": 1000, "size_bytes": 1048576, "op": "read"}}``
is the request list of a closed-loop file copy (thesis Table 3.1, workload L).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tailbound.limits import MAX_REQUEST_BYTES, MAX_SYNTHETIC_REQUESTS, MAX_TIME_S
from tailbound.sim.fields import Fields
from tailbound.traces.trace import Op, Trace


def read_trace_file(path: Path, format: str | None) -> Trace:
    """Read a trace file with the project's readers (format auto-detected unless given)."""
    from tailbound.traces import read_trace

    return read_trace(path, format)


def synthetic_trace(spec: Fields, name: str) -> Trace:
    """A generated trace (see the module docstring), by ``tailbound.traces.synthetic``."""
    from tailbound.traces.sizes import FixedSize, RandomOffsets, SequentialRuns
    from tailbound.traces.synthetic import onoff_trace, poisson_trace

    kind = spec.choice("kind", ("poisson", "onoff", "sequential"))
    size = spec.integer("size_bytes", 4096, low=1)
    if size > MAX_REQUEST_BYTES:
        raise spec.error("size_bytes", f"{size} bytes, more than the {MAX_REQUEST_BYTES} allowed")
    if kind == "sequential":
        spec.check_keys({"kind", "requests", "size_bytes", "op"})
        n = spec.integer("requests", low=1)
        if n > MAX_SYNTHETIC_REQUESTS:
            raise spec.error(
                "requests", f"{n} requests, more than the {MAX_SYNTHETIC_REQUESTS} allowed"
            )
        op_value = Op.READ if spec.choice("op", ("read", "write"), "read") == "read" else Op.WRITE
        return Trace.from_arrays(
            time=np.zeros(n),
            op=np.full(n, op_value),
            size=np.full(n, size),
            offset=np.arange(n, dtype=np.int64) * size,
            name=name,
        )
    common = {"kind", "rate", "duration_s", "seed", "size_bytes", "read_fraction", "span_bytes"}
    spec.check_keys(common | ({"c2"} if kind == "onoff" else set()) | {"mean_run_length"})
    rate = spec.number("rate", low=0.0, low_open=True)
    duration = spec.number("duration_s", low=0.0, low_open=True, high=MAX_TIME_S)
    if rate * duration > MAX_SYNTHETIC_REQUESTS:
        raise spec.error(
            "rate",
            f"{rate:g} requests/s for {duration:g} s is {rate * duration:.3g} requests, more "
            f"than the {MAX_SYNTHETIC_REQUESTS:.3g} a synthetic trace may have",
        )
    options: dict[str, Any] = {
        "seed": spec.integer("seed", 0),
        "sizes": FixedSize(size),
        "read_fraction": spec.number("read_fraction", 1.0, high=1.0),
        "name": name,
    }
    if spec.has("span_bytes"):
        span = spec.integer("span_bytes", low=1)
        options["offsets"] = (
            SequentialRuns(span, spec.number("mean_run_length", low=1.0))
            if spec.has("mean_run_length")
            else RandomOffsets(span)
        )
    if kind == "onoff":
        return onoff_trace(rate, spec.number("c2", low=1.0), duration, **options)
    return poisson_trace(rate, duration, **options)


def load_source(spec: Fields, base: Path, name: str) -> Trace:
    """The trace a workload's ``trace`` table describes."""
    if spec.has("synthetic"):
        spec.check_keys({"synthetic"})
        return synthetic_trace(spec.table("synthetic"), name)
    spec.check_keys({"path", "format"})
    path = Path(spec.string("path"))
    path = path if path.is_absolute() else base / path
    fmt = spec.raw("format")
    if fmt is not None and not isinstance(fmt, str):
        raise spec.error("format", f"expected a format name, got {fmt!r}")
    return read_trace_file(path, fmt)
