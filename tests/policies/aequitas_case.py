"""A small Aequitas tenants file for the tests: the Fig. 11 setup (3 hosts, hosts 0 and 1 →
host 2, WFQ 4:1, 1 MiB buffers, 25 µs whole-RPC SLO, the authors' rules and 2 ms window) over
an on/off trace of 32 KiB RPCs written as Parquet, 50 ms (15 152 RPCs, 0.2 s to replay)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np

from tailbound.traces.rpc_arrivals import OnOffRpcs, incast
from tailbound.traces.sizes import FixedSize
from tailbound.traces.tabular import write_parquet
from tailbound.traces.trace import Trace

NETWORK: dict[str, Any] = {
    "hosts": 3,
    "link_rate_bps": 100e9,
    "buffer_bytes": 1 << 20,
    "classes": [
        {"name": "QoS_h", "weight": 4, "slo_s": 25e-6, "slo_unit": "rpc", "dscp": 46},
        {"name": "QoS_l", "weight": 1},
    ],
    "controller": {"rules": "artifact", "increment_window_s": [0.002]},
    "seed": 1,
}
TENANT: dict[str, Any] = {
    "name": "search",
    "trace": "rpc.parquet",
    "rpc": {"class_mix": {"QoS_h": 0.7, "QoS_l": 0.3}, "pattern": "incast", "destination": 2},
}


def write_trace(path: Path, duration_s: float = 0.05, seed: int = 3) -> Path:
    """The on/off trace of 32 KiB RPCs (ρ 2, μ 0.8 into one link) as Parquet at ``path``."""
    r = OnOffRpcs(2.0, 0.8, FixedSize(32768), class_mix=(1.0,), bursts_per_on=2).generate(
        incast(3, dst=2), duration_s, seed=seed
    )
    trace = Trace(
        time=r.time_s,
        op=np.zeros(len(r), np.uint8),
        size=r.size_bytes,
        duration_s=r.duration_s,
        name=path.stem,
    )
    return write_parquet(trace, path)


def write_case(
    folder: Path,
    network: dict[str, Any] | None = None,
    tenants: list[dict[str, Any]] | None = None,
) -> Path:
    """The tenants file (``NETWORK`` and ``[TENANT]`` unless given) and its trace in ``folder``."""
    if not (folder / "rpc.parquet").exists():
        write_trace(folder / "rpc.parquet")
    doc = {
        "rpc_network": copy.deepcopy(NETWORK) if network is None else network,
        "tenants": [copy.deepcopy(TENANT)] if tenants is None else tenants,
    }
    path = folder / "tenants.json"
    path.write_text(json.dumps(doc))
    return path
