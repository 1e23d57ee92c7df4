"""What an agent posts of its host's Aequitas RPCs (``service.rpc_agent``): per tenant and class
of a replay's ``verify.csv`` (written by ``verify_aequitas``' own ``to_csv``), the RPCs asking,
those admitted and the tail at the class's percentile — none when it is infinite (an RPC went
unanswered) or when no RPC ran there — and the network-wide rows left out; the replay's span
from its ``rpcs.csv``."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tailbound.service.rpc_agent import class_summaries, replay_span
from tailbound.verify_aequitas import ClassCheck, ClassChecks


def _check(tenant: str, cls: str, tail: float, most: float, n: int, k: int) -> ClassCheck:
    return ClassCheck(tenant, cls, 0.015, "rpc", 0.999, tail, most, n, k, 0.8, k / n)


def test_class_summaries_are_verify_csvs_tenant_rows(tmp_path: Path) -> None:
    checks = ClassChecks(
        (
            _check("all", "QoS_h", 0.012, 0.02, 300, 250),
            _check("search", "QoS_h", 0.012, 0.02, 200, 180),
            _check("batch", "QoS_h", math.inf, math.inf, 100, 70),
            _check("idle", "QoS_h", math.nan, math.nan, 5, 0),
        )
    )
    checks.to_csv(tmp_path / "verify.csv")
    rows = class_summaries(tmp_path / "verify.csv")
    assert rows == [
        {"tenant": "search", "rpc_class": "QoS_h", "count": 200, "admitted": 180,
         "percentiles": {"0.999": 0.012}, "max_s": 0.02},
        {"tenant": "batch", "rpc_class": "QoS_h", "count": 100, "admitted": 70, "percentiles": {}},
        {"tenant": "idle", "rpc_class": "QoS_h", "count": 5, "admitted": 0, "percentiles": {}},
    ]  # fmt: skip


def test_the_window_runs_from_the_first_rpc_to_the_last_answer(tmp_path: Path) -> None:
    path = tmp_path / "rpcs.csv"
    path.write_text(
        "tenant,time_s,dst,class,class_run,downgraded,p_admit,size_bytes,size_mtus,"
        "issue_lag_s,latency_s\n"
        "a,0.5,1,QoS_h,QoS_h,0,1.0,8192,6,0.0001,0.01\n"
        "a,2.0,1,QoS_l,QoS_l,0,,8192,6,0.0001,0.25\n"
        "a,2.1,1,QoS_h,QoS_l,1,0.9,8192,6,,\n"
    )
    assert replay_span(path) == pytest.approx(2.25 - 0.5)
