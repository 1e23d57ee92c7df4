"""The storage enforcer's disk rule (thesis §2.2.1): sequential writes issued one after another
miss a revolution each; batched, they are written in one pass. The rule lives in the Rust core
(``sim/disk.rs``, worked cases in its cargo tests); these tests show its effect end to end
through a scenario with a disk device and a closed-loop file copy (Table 3.1's workload L)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.errors import ConfigError
from tailbound.profiles.disk import DiskProfile
from tailbound.sim import Scenario
from tailbound.sim.results import WorkloadResult
from tailbound.sim.scenario import DISK_BATCH_REQUESTS, disk_rules
from tailbound.sim.simulator import Requests, Simulator

PROFILE = {
    "type": "storageDisk",
    "rpm": 7200,
    "trackToTrackSeekTime": 0.001,
    "averageSeekTime": 0.0085,
    "fullStrokeSeekTime": 0.018,
    "capacityBytes": 10**12,
    "transferBandwidth": 1.5e8,
}
SIZE = 65536
REVOLUTION = 60.0 / 7200
TRANSFER = SIZE / 1.5e8


def copy_trace(op: str) -> dict[str, Any]:
    return {"kind": "sequential", "requests": 800, "size_bytes": SIZE, "op": op}


def copy_doc(op: str, outstanding: int, **device: Any) -> dict[str, Any]:
    """A file copy of 64 KiB requests, local to the server (no network) or over it."""
    return {
        "hosts": [{"name": "c"}, {"name": "s"}],
        "devices": [{"name": "d", "host": "s", "kind": "disk", "profile": PROFILE, **device}],
        "workloads": [
            {
                "name": "L",
                "client": "s",
                "device": "d",
                "issue": {"closed": {"outstanding": outstanding}},
                "trace": {"synthetic": copy_trace(op)},
            }
        ],
    }


def copy_run(op: str, outstanding: int, **device: Any) -> WorkloadResult:
    sim = Scenario.from_dict(copy_doc(op, outstanding, **device)).simulator()
    sim.run()
    return sim.results()["L"]


def test_disk_batching_unbatched_writes_miss_a_revolution_each() -> None:
    r = copy_run("write", 4, batch_requests=1)
    # one write at a time: every write after the first waits a whole revolution
    service = 1.0 / r.throughput()
    assert service == pytest.approx(REVOLUTION + TRANSFER, rel=0.01)


@pytest.mark.parametrize("outstanding", [2, 4, 8, 16])
def test_disk_batching_writes_a_stream_in_one_pass(outstanding: int) -> None:
    one = copy_run("write", outstanding, batch_requests=1)
    batched = copy_run("write", outstanding)  # the default: batches of DISK_BATCH_REQUESTS
    # the writes queued behind a batch form the next one: k writes (the other outstanding
    # requests, at most DISK_BATCH_REQUESTS) per revolution missed
    k = min(outstanding - 1, DISK_BATCH_REQUESTS)
    expected = k / (REVOLUTION + k * TRANSFER)
    assert batched.throughput() == pytest.approx(expected, rel=0.02)
    if k == 1:  # nothing to batch with
        assert batched.throughput() == pytest.approx(one.throughput(), rel=1e-9)
    else:
        assert batched.throughput() > 0.6 * k * one.throughput()
        assert np.percentile(batched.latency, 99) < np.percentile(one.latency, 99)


def test_disk_batching_leaves_sequential_reads_alone() -> None:
    # sequential reads are served from the disk cache: transfer only, batching or not
    one = copy_run("read", 4, batch_requests=1)
    batched = copy_run("read", 4)
    assert one.throughput() == pytest.approx(batched.throughput(), rel=1e-9)
    # 799 transfers and the first request's positioning (average seek + half a revolution)
    span = 799 * TRANSFER + 0.0085 + REVOLUTION / 2 + TRANSFER
    assert one.throughput() == pytest.approx(800 / span, rel=0.01)


def test_disk_batching_rules_follow_the_profile() -> None:
    rules = disk_rules(DiskProfile.from_json(PROFILE), batch_requests=3, gap_bytes=0)
    assert rules == {
        "revolution": pytest.approx(REVOLUTION),
        "transfer_bandwidth": 1.5e8,
        "reposition": pytest.approx(0.0085 + REVOLUTION / 2),
        "batch_requests": 3,
        "gap_bytes": 0.0,
    }


@pytest.mark.parametrize(
    ("device", "field"),
    [
        ({"batch_requests": 0}, "batch_requests"),
        ({"gap_bytes": -1}, "gap_bytes"),
        ({"kind": "memory", "profile": None, "batch_requests": 2}, "batch_requests"),
    ],
)
def test_disk_batching_bad_settings_name_the_field(device: dict[str, Any], field: str) -> None:
    doc = copy_doc("write", 2)
    doc["devices"][0] |= device
    if doc["devices"][0].get("profile") is None:
        del doc["devices"][0]["profile"]
    with pytest.raises(ConfigError, match=field):
        Scenario.from_dict(doc)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 6),
    n=st.integers(1, 60),
)
def test_disk_batching_keeps_the_schedulers_order(seed: int, batch: int, n: int) -> None:
    """FIFO dispatcher, one request in the disk at a time, random reads and writes, runs of
    sequential writes: batches only take the requests the scheduler would serve next, so
    requests finish in arrival order, each no sooner than its transfer after it arrived."""
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.uniform(0.0, 0.05, n))
    op = (rng.uniform(size=n) < 0.7).astype(np.uint8)
    size = np.full(n, 4096.0)
    offset = np.where(rng.uniform(size=n) < 0.6, 0.0, rng.integers(1, 10**6, n) * 4096.0)
    offset = np.cumsum(np.where(offset == 0.0, 4096.0, 0.0)) + offset  # runs continue
    cost = np.where(rng.uniform(size=n) < 0.5, 4096 / 1e8, 0.012)
    rules = {
        "revolution": 0.008,
        "transfer_bandwidth": 1e8,
        "reposition": 0.01,
        "batch_requests": batch,
        "gap_bytes": 0.0,
    }
    config = {
        "topology": {"devices": [{"disk": rules}]},
        "workloads": [{"route": [{"device": 0}], "issue": "open"}],
    }
    req = Requests(arrival=arrival, op=op, size=size, cost=[cost], offset=offset)
    sim = Simulator(config, [req], names=["w"], stage_names=[("storage",)])
    sim.run()
    r = sim.results()["w"]
    done = r.issue + r.latency
    assert np.all(np.isfinite(done))
    assert np.all(np.diff(done) >= -1e-12)
    assert np.all(r.latency >= 4096 / 1e8 - 1e-12)
