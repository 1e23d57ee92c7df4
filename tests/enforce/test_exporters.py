"""The exporters of a Plan's storage buckets (``tailbound.enforce.exporters`` and its
conversions, ``tailbound.enforce.byte_limits``; ``tailbound export``): every mapping against
hand-computed numbers, the conservative conversion as a property (no mix of the tenant's requests
passing the limits costs more than ``r·T + b`` device-seconds), the verb's exit codes, and live
runs of nbdkit's rate filter driven by fio's ``nbd`` engine and of QEMU's throttle with qemu-io."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.cli.main import main
from tailbound.enforce.byte_limits import ByteLimit, RequestMix, affine_cost, convert
from tailbound.enforce.exporters import (
    export_ceph,
    export_cgroup,
    export_libvirt,
    export_nbdkit,
    export_qemu,
)
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import (
    Bound,
    Discipline,
    DispatchRule,
    NestedClass,
    Plan,
    Rejection,
    StageLimit,
    TenantPlan,
)
from tailbound.profiles.tokens import SsdModel, SsdProfile
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces import Trace

#: Two sizes: a 4 KiB read costs 102.4 µs, a 64 KiB read 819.2 µs, a 4 KiB write 204.8 µs.
PROFILE = SsdProfile(
    sizes=np.array([4096.0, 65536.0]),
    read_bandwidth=np.array([40e6, 80e6]),
    write_bandwidth=np.array([20e6, 60e6]),
)


def _tenant(
    name: str,
    limits: list[StageLimit],
    level: int | None = 0,
    device: str | None = "ssd0",
) -> TenantPlan:
    first = {Stage.STORAGE: limits[0]} if limits else {}
    extra = {Stage.STORAGE: tuple(limits[1:])} if len(limits) > 1 else {}
    return TenantPlan(
        name,
        Slo(0.05),
        "s0",
        device,
        dict.fromkeys(STORAGE_PATH, level),
        first,
        Bound(0.04, "test"),
        extra_limits=extra,
    )


def _plan(*tenants: TenantPlan, **kw: Any) -> Plan:
    return Plan("test", 1, list(tenants), **kw)


def _trace(ops: list[int], sizes: list[int]) -> Trace:
    return Trace.from_arrays(time=np.arange(len(ops), dtype=float), op=ops, size=sizes)


# ------------------------------------------------------------------------------ conversions
def test_convert_bytes_uses_the_slowest_row_without_a_trace() -> None:
    # the slowest row is the 4 KiB write, 20 MB/s: 0.5 × 20e6 bytes/s, 0.01 s × 20e6 bytes
    assert convert(0.5, 0.01, PROFILE, None, "bytes") == ByteLimit(10e6, 2e5)


@pytest.mark.parametrize(
    ("ops", "sizes", "bw"),
    [
        ([0], [65536], 80e6),  # 64 KiB reads only
        ([0, 0], [4096, 65536], 40e6),  # the slower of the two
        ([0], [34816], 60e6),  # halfway between the rows: interpolated
        ([0, 1], [65536, 65536], 60e6),  # a 64 KiB write is slower than a read
        ([0], [1 << 20], 80e6),  # beyond the last row its bandwidth holds
    ],
)
def test_convert_bytes_over_the_trace_sizes(ops: list[int], sizes: list[int], bw: float) -> None:
    mix = RequestMix.from_trace(_trace(ops, sizes))
    lim = convert(0.5, 0.01, PROFILE, mix, "bytes")
    assert lim.bytes_per_s == pytest.approx(0.5 * bw)
    assert lim.bucket_bytes == pytest.approx(0.01 * bw)
    assert lim.iops is None


def test_convert_bytes_and_iops_passes_the_mean_request_at_its_mean_cost() -> None:
    # 4 KiB (102.4 µs) and 64 KiB (819.2 µs) reads, one each: the line through both points,
    # α = 716.8 µs / 61440 B, β = 102.4 µs - 4096 α = 54.6133 µs; mean size 34816 B, mean cost
    # 460.8 µs: B = r·s̄/c̄, I = r/c̄
    mix = RequestMix.from_trace(_trace([0, 0], [4096, 65536]))
    alpha, beta, mean = affine_cost(PROFILE, mix)
    assert alpha == pytest.approx(716.8e-6 / 61440)
    assert beta == pytest.approx(54.61333e-6, rel=1e-6)
    assert mean == 34816
    lim = convert(0.5, 0.02, PROFILE, mix, "bytes+iops")
    assert lim.bytes_per_s == pytest.approx(0.5 * 34816 / 460.8e-6)  # 37.78 MB/s
    assert lim.iops == pytest.approx(0.5 / 460.8e-6)  # 1085.07 requests/s
    assert lim.bucket_bytes == pytest.approx(0.02 * 34816 / 460.8e-6)
    assert lim.bucket_ios == pytest.approx(0.02 / 460.8e-6)
    # against bytes alone (40 MB/s × 0.5 = 20 MB/s: 574 mean requests/s), 1.89 times as many
    bytes_only = convert(0.5, 0.02, PROFILE, mix, "bytes").bytes_per_s / 34816
    assert bytes_only == pytest.approx(574.4, abs=0.1) and lim.iops is not None
    assert lim.iops / bytes_only == pytest.approx(1.889, abs=1e-3)


def test_convert_bytes_and_iops_of_one_size_is_the_bytes_limit() -> None:
    mix = RequestMix.from_trace(_trace([0, 0], [65536, 65536]))
    assert convert(0.5, 0.01, PROFILE, mix, "bytes+iops") == ByteLimit(40e6, 8e5)


def test_convert_refuses_an_unknown_conversion() -> None:
    with pytest.raises(ConfigError, match="unknown conversion"):
        convert(0.5, 0.01, PROFILE, None, "iops")


# ------------------------------------------------------------------------------ the property
@st.composite
def _case(draw: Any) -> tuple[SsdProfile, RequestMix | None, list[int], list[int], Any]:
    rows = draw(st.integers(1, 4))
    sizes = np.cumsum(draw(st.lists(st.integers(1, 64), min_size=rows, max_size=rows))) * 512.0
    bw = st.floats(1e5, 1e9, allow_nan=False)
    profile = SsdProfile(
        sizes=sizes,
        read_bandwidth=np.array(draw(st.lists(bw, min_size=rows, max_size=rows))),
        write_bandwidth=np.array(draw(st.lists(bw, min_size=rows, max_size=rows))),
    )
    top = int(sizes[-1] // 512) * 2 + 2  # beyond the last row too
    kinds = draw(
        st.lists(st.tuples(st.integers(0, 1), st.integers(1, top)), min_size=1, max_size=6)
    )
    traced = draw(st.booleans())
    mix = (
        RequestMix.from_trace(_trace([k[0] for k in kinds], [k[1] * 512 for k in kinds]))
        if traced
        else None
    )
    # a mix of the tenant's requests (any of them when it has no trace): counts per kind
    counts = draw(st.lists(st.integers(0, 50), min_size=len(kinds), max_size=len(kinds)))
    if sum(counts) == 0:
        counts[0] = 1
    ops = [k[0] for k, c in zip(kinds, counts, strict=True) for _ in range(c)]
    req = [k[1] * 512 for k, c in zip(kinds, counts, strict=True) for _ in range(c)]
    return profile, mix, ops, req, draw


@settings(max_examples=300, deadline=None)
@given(
    case=_case(),
    rate=st.floats(1e-4, 1.0),
    bucket=st.floats(0.0, 10.0),
    interval=st.floats(1e-3, 1e4),
    conversion=st.sampled_from(["bytes", "bytes+iops"]),
)
def test_conservative_conversion_never_lets_more_device_seconds_through(
    case: Any, rate: float, bucket: float, interval: float, conversion: str
) -> None:
    """For any mix of the tenant's requests, the most that passes the limits in ``T`` seconds
    (bytes ≤ B·T + bucket bytes and, in ``bytes+iops``, I/Os ≤ I·T + bucket I/Os; the mix scaled
    up to the first limit it meets, fractions of it allowed) costs at most ``r·T + b``
    device-seconds, the costs from :class:`SsdModel`, as the analysis prices them."""
    profile, mix, ops, sizes, _ = case
    lim = convert(rate, bucket, profile, mix, conversion)
    cost = SsdModel(profile).tokens(_trace(ops, sizes))
    used = lim.device_seconds(np.array(sizes, float), cost, interval)
    budget = rate * interval + bucket
    assert used <= budget * (1 + 1e-9), (
        f"{profile!r}, mix={mix!r}, ops={ops}, sizes={sizes}, {lim!r}: {used} > {budget}"
    )


# ------------------------------------------------------------------------------ targets
def test_qemu_bucket_of_a_second_or_more_is_max_with_length_one() -> None:
    e = export_qemu(_plan(_tenant("A", [StageLimit(0.5, 2.0)])), PROFILE, conversion="bytes")
    assert e.exact and e.warnings == ()
    assert e.config[0]["limits"] == {
        "bps-total": 10_000_000,
        "bps-total-max": 40_000_000,
        "bps-total-max-length": 1,
    }
    assert (
        "throttling.bps-total=10000000,throttling.bps-total-max=40000000,"
        "throttling.bps-total-max-length=1,throttling.group=A"
    ) in e.text
    qmp = json.loads(e.text.splitlines()[1])
    assert qmp["execute"] == "object-add" and qmp["arguments"]["qom-type"] == "throttle-group"


def test_qemu_bucket_under_a_second_of_rate_has_no_max_and_a_warning() -> None:
    e = export_qemu(_plan(_tenant("A", [StageLimit(0.5, 0.01)])), PROFILE, conversion="bytes")
    assert e.config[0]["limits"] == {"bps-total": 10_000_000}
    assert not e.exact
    (w,) = e.warnings
    # QEMU's own bucket, avg/10: 0.1 s × 0.5 = 0.05 device-seconds, more than the plan's 0.01
    assert w.tenant == "A" and "0.05 device-seconds (more than" in w.message


def test_qemu_iops_mode_and_libvirt_iotune() -> None:
    tr = {"A": _trace([0, 0], [4096, 65536])}
    plan = _plan(_tenant("A", [StageLimit(0.5, 2.0)]))
    q = export_qemu(plan, PROFILE, tr, conversion="bytes+iops")
    assert q.config[0]["limits"] == {
        "bps-total": 37_777_777,
        "bps-total-max": 151_111_111,
        "bps-total-max-length": 1,
        "iops-total": 1085,
        "iops-total-max": 4340,
        "iops-total-max-length": 1,
    }
    v = export_libvirt(plan, PROFILE, tr, conversion="bytes+iops")
    assert v.config[0]["iotune"] == {
        "total_bytes_sec": 37_777_777,
        "total_bytes_sec_max": 151_111_111,
        "total_bytes_sec_max_length": 1,
        "total_iops_sec": 1085,
        "total_iops_sec_max": 4340,
        "total_iops_sec_max_length": 1,
        "group_name": "A",
    }
    assert "<iotune><total_bytes_sec>37777777</total_bytes_sec>" in v.text


def test_priorities_dispatch_rule_and_demotion_are_warned_about() -> None:
    plan = _plan(
        _tenant("H", [StageLimit(0.5, 2.0)], level=0),
        _tenant("L", [StageLimit(0.5, 2.0)], level=1),
        dispatch=DispatchRule(read_mpl=2, low_priority_mpl=0),
        disciplines=dict.fromkeys(STORAGE_PATH, Discipline("priority", "demotion")),
    )
    e = export_libvirt(plan, PROFILE)
    text = "\n".join(str(w) for w in e.warnings)
    assert "priorities (2 levels) are lost" in text
    assert "dispatch rule (read_mpl, low_priority_mpl)" in text
    assert "demotes" in text
    assert not e.exact


@pytest.mark.parametrize(
    ("discipline", "settings", "expected"),
    [
        # a weight is a share of the device even when equal: no per-tenant limit gives it
        ("sfq", {}, "cannot express the plan's weights (sfq scheduling)"),
        ("edf", {"deadline_s": {Stage.STORAGE: 0.01}}, "the plan's deadlines (edf scheduling)"),
        ("edf", {}, None),  # one deadline for all (the SLO): served in arrival order
        ("dwrr", {"service_class": {Stage.STORAGE: "gold"}}, "service classes (dwrr scheduling)"),
        ("dwrr", {}, None),  # one class: round robin over one class is arrival order
        ("priority", {}, None),  # one level
    ],
)
def test_a_scheduler_that_tells_tenants_apart_is_warned_about_whatever_its_kind(
    discipline: str, settings: dict[str, Any], expected: str | None
) -> None:
    """The exporters read the device's scheduler as the simulator runs it (the one translation,
    ``tailbound.plan_queues``), with no branch per kind; tenant A gets the settings."""
    a = dataclasses.replace(_tenant("A", [StageLimit(0.5, 2.0)]), **settings)
    plan = _plan(
        a,
        _tenant("B", [StageLimit(0.5, 2.0)]),
        disciplines=dict.fromkeys(STORAGE_PATH, Discipline(discipline)),
    )
    e = export_qemu(plan, PROFILE)
    if expected is None:
        assert e.exact and e.warnings == ()
    else:
        (w,) = e.warnings
        assert w.inexact and w.message.startswith("s0.ssd0: qemu ") and expected in w.message
        assert not e.exact


def _nested_plan(*names: str) -> Plan:
    """``names`` on one device scheduled ``nested`` (what ``tailbound admit --policy
    nested-qos`` writes): the first with two classes and a graduated SLO, the others with a
    single-pair SLO, one class and a storage bucket."""
    tenants = []
    for i, name in enumerate(names):
        t = _tenant(name, [] if i == 0 else [StageLimit(0.5, 2.0)])
        if i == 0:
            classes = (NestedClass(0.002, 0.3, 0.005), NestedClass(0.004, 0.4, 0.05))
            slo = Slo.graduated([(0.005, 0.9), (0.05, 0.99)])
        else:
            classes, slo = (NestedClass(0.001, 0.1, 0.01),), Slo(0.01, 0.99)
        tenants.append(dataclasses.replace(t, slo=slo, nested={Stage.STORAGE: classes}))
    storage = {
        **dict.fromkeys(STORAGE_PATH, Discipline("fifo")),
        Stage.STORAGE: Discipline("nested"),
    }
    return _plan(*tenants, disciplines=storage)


EXPORT_CALLS = [
    lambda plan: export_qemu(plan, PROFILE),
    lambda plan: export_libvirt(plan, PROFILE),
    lambda plan: export_cgroup(plan, PROFILE, device="8:0"),
    lambda plan: export_ceph(plan, PROFILE),
    lambda plan: export_nbdkit(plan, PROFILE),
]


@pytest.mark.parametrize(
    "export", EXPORT_CALLS, ids=["qemu", "libvirt", "cgroup", "ceph", "nbdkit"]
)
def test_nested_classes_and_graduated_slos_are_warned_per_tenant(export: Any) -> None:
    """No target has a per-request classifier or deadlines: each tenant's classes are a warning
    naming them (even a tenant alone on its device, where no scheduler setting tells tenants
    apart), and so is a graduated SLO, naming its grades; no limit is made of the classes."""
    e = export(_nested_plan("G"))
    assert not e.exact and e.config == []
    lost = [w for w in e.warnings if w.tenant == "G" and w.inexact]
    assert len(lost) == 2, e.warnings
    classes, grades = (str(w) for w in lost)
    assert classes.startswith("warning: G: its 2 Nested QoS storage classes")
    assert "(0.002 s, 0.3, 5 ms); (0.004 s, 0.4, 50 ms) lost" in classes
    assert "no per-request classifier and no deadlines" in classes
    assert "0.9 within 5 ms, 0.99 within 50 ms" in grades and "graduated SLO" in grades
    # two tenants: the single-pair one with a bucket gets its limit and its classes' warning
    e = export(_nested_plan("G", "P"))
    assert [c["tenant"] for c in e.config] == ["P"]
    per_tenant = [w for w in e.warnings if w.inexact and "Nested QoS storage class" in str(w)]
    assert [w.tenant for w in per_tenant] == ["G", "P"]
    assert not any(w.tenant == "P" and "graduated" in w.message for w in e.warnings)
    assert any(w.tenant is None and "Nested QoS classes (nested scheduling)" in w.message
               for w in e.warnings)  # fmt: skip


def test_several_buckets_become_the_smallest_rate_and_bucket() -> None:
    plan = _plan(_tenant("A", [StageLimit(0.2, 3.0), StageLimit(0.6, 1.5)]))
    e = export_ceph(plan, PROFILE, conversion="bytes")
    # (0.2, 1.5): 4 MB/s, 30 MB bucket
    assert e.config[0]["settings"]["rbd_qos_bps_limit"] == 4_000_000
    assert e.config[0]["settings"]["rbd_qos_bps_burst"] == 30_000_000
    assert [w.tenant for w in e.warnings] == ["A"] and "2 storage buckets" in str(e.warnings[0])


def test_tenants_without_limits_network_only_and_rejected_get_notes() -> None:
    plan = _plan(
        _tenant("A", [StageLimit(0.5, 2.0)]),
        _tenant("U", []),
        _tenant("N", [], device=None),
        rejected=[Rejection("R", "no room")],
    )
    e = export_nbdkit(plan, PROFILE)
    assert [c["tenant"] for c in e.config] == ["A"]
    assert sorted(w.tenant for w in e.warnings if w.tenant) == ["N", "R", "U"]
    assert e.exact  # notes only
    assert all(str(w).startswith("note: ") for w in e.warnings)


def test_cgroup_splits_reads_and_writes_and_warns_about_the_slice() -> None:
    plan = _plan(_tenant("A", [StageLimit(0.5, 0.05)]))  # b = 0.1 s of rate: the slice's
    e = export_cgroup(plan, PROFILE, device="8:0", conversion="bytes")
    # half each: reads 0.25 × 40 MB/s, writes 0.25 × 20 MB/s
    assert e.text == "echo '8:0 rbps=10000000 wbps=5000000' > /sys/fs/cgroup/tailbound/A/io.max\n"
    assert [("reads and writes apart" in w.message) for w in e.warnings] == [True]
    # from a trace: three 4 KiB reads (307.2 µs) and one 4 KiB write (204.8 µs): 60% to reads
    tr = {"A": _trace([0, 0, 0, 1], [4096] * 4)}
    e = export_cgroup(plan, PROFILE, tr, device="8:0", root="/cg", conversion="bytes+iops")
    assert e.config[0]["line"] == "8:0 rbps=12000000 wbps=4000000"  # one size each: bytes only
    assert e.config[0]["read_share"] == pytest.approx(0.6)
    assert e.config[0]["path"] == "/cg/A/io.max"


@pytest.mark.parametrize(("bucket", "effect"), [(0.5, "held back"), (0.01, "may pass more")])
def test_cgroup_bucket_other_than_the_slice_allowance_is_a_warning(
    bucket: float, effect: str
) -> None:
    e = export_cgroup(
        _plan(_tenant("A", [StageLimit(0.5, bucket)])), PROFILE, device="8:0", conversion="bytes"
    )
    (w,) = [w for w in e.warnings if "no burst setting" in w.message]
    assert effect in w.message and "about 0.05 device-seconds" in w.message


def test_cgroup_needs_a_device_number() -> None:
    with pytest.raises(ConfigError, match="MAJ:MIN"):
        export_cgroup(_plan(_tenant("A", [StageLimit(0.5, 0.05)])), PROFILE, device="sda")


@pytest.mark.parametrize(
    ("limit", "bucket"), [(StageLimit(0.5, 2.0), 2.0), (StageLimit(0.5, 1.0), 1.0)]
)
def test_ceph_burst_times_seconds_is_the_bucket(limit: StageLimit, bucket: float) -> None:
    e = export_ceph(
        _plan(_tenant("A", [limit])), PROFILE, pool="vms", image="vol-{tenant}", conversion="bytes"
    )
    s = e.config[0]["settings"]
    assert s["rbd_qos_bps_limit"] == 10_000_000
    assert s["rbd_qos_bps_burst"] * s["rbd_qos_bps_burst_seconds"] == bucket * 20e6
    assert s["rbd_qos_bps_burst"] >= s["rbd_qos_bps_limit"]
    assert e.exact
    assert e.text.splitlines()[0] == "rbd config image set vms/vol-A rbd_qos_bps_limit 10000000"


def test_ceph_bucket_under_a_second_is_raised_to_the_limit_with_a_warning() -> None:
    e = export_ceph(_plan(_tenant("A", [StageLimit(0.5, 0.01)])), PROFILE, conversion="bytes")
    s = e.config[0]["settings"]
    assert s["rbd_qos_bps_burst"] == s["rbd_qos_bps_limit"] == 10_000_000
    assert not e.exact and "0.5 device-seconds" in e.warnings[0].message
    assert e.config[0]["image"] == "rbd/A"


def test_nbdkit_rate_is_in_bits_and_burstiness_is_b_over_r() -> None:
    e = export_nbdkit(_plan(_tenant("A", [StageLimit(0.5, 0.01)])), PROFILE, plugin="memory 1G")
    assert e.text == "nbdkit --filter=rate memory 1G rate=80000000 burstiness=0.02\n"
    assert e.exact
    n = export_nbdkit(
        _plan(_tenant("A", [StageLimit(0.5, 0.01)])), PROFILE, conversion="bytes+iops"
    )
    assert n.config[0]["rate_bits"] == 80_000_000 and n.exact  # a note: bytes only


# ------------------------------------------------------------------------------ the verb
@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(PROFILE.to_json()))
    exact = tmp_path / "exact.json"
    _plan(_tenant("A", [StageLimit(0.5, 2.0)])).save(exact)
    small = tmp_path / "small.json"
    _plan(_tenant("A", [StageLimit(0.5, 0.01)])).save(small)
    trace = tmp_path / "a.csv"
    trace.write_text("".join(f"{i * 1000},0x{4096:08x},DiskRead\n" for i in range(1, 20)))
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps({"tenants": [{"name": "A", "slo_s": 0.05, "trace": trace.name}]}))
    return {"profile": profile, "exact": exact, "small": small, "tenants": tenants}


def test_export_exits_0_when_exact(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "qemu.txt"
    code = main(["export", "qemu", str(files["exact"]), "--profile", str(files["profile"]),
                 "--conversion", "bytes", "--out", str(out)])  # fmt: skip
    assert code == 0 and capsys.readouterr().err == ""
    assert "throttling.bps-total-max=40000000" in out.read_text()


def test_export_exits_1_with_one_line_per_warning(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["export", "qemu", str(files["small"]), "--profile", str(files["profile"]),
                 "--conversion", "bytes"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    assert "throttling.bps-total=10000000,throttling.group=A" in captured.out
    (line,) = captured.err.splitlines()
    assert line.startswith("tailbound export qemu: warning: A: bucket 0.01 s")


def test_export_of_a_nested_plan_exits_1_naming_each_tenants_classes(
    tmp_path: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nested.json"
    _nested_plan("G", "P").save(path)
    code = main(["export", "libvirt", str(path), "--profile", str(files["profile"])])
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    for line in (
        "tailbound export libvirt: warning: G: its 2 Nested QoS storage classes",
        "tailbound export libvirt: warning: G: its graduated SLO (0.9 within 5 ms, 0.99 within",
        "tailbound export libvirt: warning: P: its 1 Nested QoS storage class (sigma_s, rho",
    ):
        assert any(e.startswith(line) for e in err), (line, err)


def test_export_reads_traces_from_the_tenants_file(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["export", "nbdkit", str(files["exact"]), "--profile", str(files["profile"])]
    assert main([*args, "--tenants", str(files["tenants"])]) == 0
    captured = capsys.readouterr()
    # the trace's 4 KiB reads, 40 MB/s: 0.5 × 40e6 × 8 bits
    assert "rate=160000000 burstiness=4" in captured.out
    # notes only: bytes+iops falls back to bytes, and one size uses all of r
    assert captured.err.splitlines() == [
        "tailbound export nbdkit: note: nbdkit's rate filter has no I/O limit: bytes conversion",
        "tailbound export nbdkit: note: A: its trace's mix can use 100.0% of its rate 0.5 under "
        "these limits (the price of never exceeding it)",
    ]


def test_export_fio_writes_an_iolog_per_tenant_and_a_job(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fio"
    args = ["export", "fio", str(files["exact"]), "--tenants", str(files["tenants"])]
    assert main([*args, "--out", str(out), "--port", "10810"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["A.iolog", "replay.fio"]
    lines = (out / "A.iolog").read_text().splitlines()
    assert lines[0] == "fio version 3 iolog" and len(lines) == 3 + 19 + 1  # header, add/open, close
    assert lines[3] == "1 A read 0 4096"  # the first request at 1 µs, 4 KiB at offset 0
    job = (out / "replay.fio").read_text()
    assert "uri=nbd://127.0.0.1:10810/A" in job and f"read_iolog={out / 'A.iolog'}" in job
    # the second half of the 18 µs the trace spans, from 10 µs: its last 10 requests
    assert main([*args, "--out", str(tmp_path / "half"), "--half", "second"]) == 0
    assert len((tmp_path / "half" / "A.iolog").read_text().splitlines()) == 3 + 10 + 1


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (["--export-size", "1K"], "less than one 4096-byte slot"),
        (["--device", "nowhere.ssd9"], "no storage tenant on nowhere.ssd9"),
        (["--window", "5", "1"], "--window"),
    ],
)
def test_export_fio_bad_input_exits_2_and_writes_nothing(
    extra: list[str],
    names: str,
    files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "fio"
    args = ["export", "fio", str(files["exact"]), "--tenants", str(files["tenants"])]
    assert main([*args, "--out", str(out), *extra]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert names in line
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".fio")]


def test_default_conversion_is_bytes_and_iops(files: dict[str, Path]) -> None:
    plan = Plan.load(files["exact"])
    e = export_qemu(plan, PROFILE)
    assert set(e.config[0]["limits"]) == {
        f"{u}-total{s}" for u in ("bps", "iops") for s in ("", "-max", "-max-length")
    }
    assert e.exact
    # it lets the two-size mix use all of r where bytes alone lets it use 52.9%
    tr = {"A": _trace([0, 0], [4096, 65536])}
    shares = [
        next(w.message for w in export_qemu(plan, PROFILE, tr, conversion=c).warnings)
        for c in ("bytes+iops", "bytes")
    ]
    assert "can use 100.0%" in shares[0] and "can use 52.9%" in shares[1]


@pytest.mark.parametrize(
    ("target", "extra", "names"),
    [
        ("qemu", ["PLAN", "--profile", "missing.json"], "missing.json"),
        ("qemu", ["missing.json", "--profile", "PROFILE"], "missing.json"),
        ("qemu", ["PROFILE", "--profile", "PROFILE"], "format"),
        ("cgroup", ["PLAN", "--profile", "PROFILE", "--device", "sda"], "--device"),
        ("cgroup", ["PLAN", "--profile", "PROFILE"], "--device"),
        ("ceph", ["PLAN", "--profile", "PROFILE", "--pool", "a/b"], "--pool"),
        ("qemu", ["PLAN", "--profile", "PROFILE", "--conversion", "iops"], "--conversion"),
        ("qemu", ["PLAN", "--profile", "PLAN"], "field type"),
        ("qemu", ["PLAN", "--profile", "PROFILE", "--tenants", "EMPTY"], "no tenant for"),
    ],
)
def test_export_bad_input_exits_2_with_one_line(
    target: str,
    extra: list[str],
    names: str,
    files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"tenants": [{"name": "B", "slo_s": 1, "trace": "b.csv"}]}))
    swap = {"PLAN": str(files["exact"]), "PROFILE": str(files["profile"]), "EMPTY": str(empty)}
    out = tmp_path / "out.txt"
    code = main(["export", target, *[swap.get(a, a) for a in extra], "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert names in err
    assert not out.exists()


# ------------------------------------------------------------------------------ live
def test_nbdkit_rate_filter_holds_the_exported_rate_live(tmp_path: Path) -> None:
    """nbdkit's rate filter with the exported command line in front of a file; fio's ``nbd``
    engine writes 4 KiB blocks as fast as it can (queue depth 4) for 3 s. The 4 KiB write is
    the profile's slowest row, so the exported rate is exact in device-seconds: r = 0.2 of a
    20 MB/s device is 4 MB/s, 976.6 writes/s, and b = 0.01 s is 200 kB, burstiness 0.05 s.

    Tolerances: the rate filter's bucket starts full, so in T seconds at most ``B·T + bucket``
    bytes pass, plus the requests in flight when fio stops (4 × 4 KiB): the device-seconds of
    what passed are checked against ``r·T + b`` with 2% on top for fio's runtime measurement
    (it counts from its first I/O, a few ms late at most on a 3 s run). From below, a client
    that always has a request waiting gets the rate less the filter's wake-up delays: within
    15% on this loaded 2-core machine."""
    for tool in ("nbdkit", "fio"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (Debian packages nbdkit and fio; see .ci/run)")
    rate, bucket = 0.2, 0.01
    disk = tmp_path / "A.img"
    with disk.open("wb") as f:
        f.truncate(64 << 20)
    sock = tmp_path / "nbd.sock"
    e = export_nbdkit(
        _plan(_tenant("A", [StageLimit(rate, bucket)])), PROFILE, plugin=f"file {disk}"
    )
    argv = e.config[0]["argv"]
    assert argv[:2] == ["nbdkit", "--filter=rate"] and argv[-1] == "burstiness=0.05"
    bytes_per_s = 4e6
    assert e.config[0]["rate_bits"] == 8 * bytes_per_s
    nbdkit = subprocess.Popen(
        [argv[0], "-f", "-U", str(sock), *argv[1:]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(200):
            if sock.exists():
                break
            time.sleep(0.02)
        job = tmp_path / "job.fio"
        job.write_text(
            f"""[global]
ioengine=nbd
uri=nbd+unix:///?socket={sock}
bs=4k
iodepth=4
time_based=1
runtime=3
size=64m
[write]
rw=randwrite
"""
        )
        p = subprocess.run(
            ["fio", "--output-format=json", str(job)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert p.returncode == 0, p.stderr
        result = json.loads(p.stdout[p.stdout.index("{") :])
    finally:
        nbdkit.terminate()
        nbdkit.communicate(timeout=10)
    write = result["jobs"][0]["write"]
    seconds = write["runtime"] / 1000
    passed = write["io_bytes"]
    measured = passed / seconds
    writes = passed // 4096
    device_s = float(SsdModel(PROFILE).tokens(_trace([1] * writes, [4096] * writes)).sum())
    print(
        f"nbdkit rate filter: {measured:.0f} B/s over {seconds:.2f} s (exported {bytes_per_s:.0f}),"
        f" {device_s:.4f} device-seconds against r·T + b = {rate * seconds + bucket:.4f}"
    )
    assert device_s <= (rate * seconds + bucket) * 1.02 + 4 * 4096 / 20e6
    assert measured >= 0.85 * bytes_per_s
    assert math.isfinite(measured)


def _qemu_io(tmp: Path, qmp_arguments: dict[str, Any], writes: int) -> tuple[int, list[float], str]:
    """Run qemu-io over a throttle node of the exported group: ``writes`` 64 KiB writes one
    after another; returns its exit code, each write's seconds and its stderr."""
    disk = tmp / "disk.img"
    with disk.open("wb") as f:
        f.truncate(16 << 20)
    cmds = [a for i in range(writes) for a in ("-c", f"write {(i * 65536) % (16 << 20)} 64k")]
    group = qmp_arguments["id"]
    p = subprocess.run(
        [
            "qemu-io",
            "--object",
            json.dumps(qmp_arguments),
            "--image-opts",
            f"driver=throttle,throttle-group={group},file.driver=file,file.filename={disk}",
            *cmds,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # "64 KiB, 1 ops; 00.00 sec (281.785 MiB/sec and 4508.5663 ops/sec)": 1/ops is the write's time
    seconds = [1 / float(m) for m in re.findall(r"and ([0-9.]+) ops/sec", p.stdout)]
    return p.returncode, seconds, p.stderr


@pytest.mark.parametrize(
    ("bucket", "burst_s"),
    [(0.4, 1.0), (0.001, 0.1)],  # max = b·bw, one second's length; b < r: QEMU's avg/10
)
def test_qemu_throttle_group_holds_the_exported_limits_live(
    bucket: float, burst_s: float, tmp_path: Path
) -> None:
    """The exported QMP ``object-add`` arguments as ``qemu-io --object``, a throttle node over
    a file in memory, and 64 KiB writes one after another. r = 0.4 of the 20 MB/s slowest row:
    B = 8 MB/s; the bucket QEMU keeps is ``bps-total-max`` × 1 s when ``b ≥ r`` and its own
    avg/10 otherwise, as the warning says (``burst_s`` seconds of rate).

    Checks: after every write ``k``, the bytes written are at most ``B·t_k + bucket`` plus two
    requests (QEMU's meter admits a request while its level is not above the bucket, and the
    gaps between qemu-io's commands, not in ``t_k``, leak too): never more than the limit. And
    the last write ends by ``(bytes − bucket)/B`` plus 10% and 20 ms (a smaller bucket than
    expected, e.g. the plan's 0.001 s, would take 0.1 s longer here)."""
    if shutil.which("qemu-io") is None:
        pytest.skip("needs qemu-io (Debian package qemu-utils; see .ci/run)")
    e = export_qemu(_plan(_tenant("A", [StageLimit(0.4, bucket)])), PROFILE, conversion="bytes")
    rate_b = 8e6
    assert e.config[0]["limits"]["bps-total"] == rate_b
    assert ("bps-total-max" in e.config[0]["limits"]) == (bucket >= 0.4)
    assert e.exact == (bucket >= 0.4)
    bucket_b = burst_s * rate_b
    writes = int(bucket_b // 65536) + 40
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else tmp_path) as d:
        code, seconds, err = _qemu_io(Path(d), e.config[0]["qmp"]["arguments"], writes)
    assert code == 0, err
    assert len(seconds) == writes
    done = np.cumsum(seconds)
    written = 65536 * np.arange(1, writes + 1)
    excess = written - (rate_b * done + bucket_b + 2 * 65536)
    assert excess.max() <= 0, f"write {int(excess.argmax())} passed {excess.max():.0f} B over"
    expected = (written[-1] - bucket_b) / rate_b
    print(f"b={bucket}: {writes} writes in {done[-1]:.3f} s, expected {expected:.3f} s")
    assert done[-1] <= 1.1 * expected + 0.02


def test_qemu_refuses_a_max_below_the_average_live(tmp_path: Path) -> None:
    """Why no max is exported when b < r: QEMU refuses ``bps-total-max`` < ``bps-total``."""
    if shutil.which("qemu-io") is None:
        pytest.skip("needs qemu-io (Debian package qemu-utils; see .ci/run)")
    limits = {"bps-total": 8_000_000, "bps-total-max": 200_000, "bps-total-max-length": 1}
    code, _, err = _qemu_io(
        tmp_path, {"qom-type": "throttle-group", "id": "A", "limits": limits}, 1
    )
    assert code != 0 and "cannot be lower than" in err


def test_every_exporter_warns_it_cannot_run_a_pslo_controller() -> None:
    from tailbound.plan import StageControl

    t = dataclasses.replace(
        _tenant("A", [StageLimit(0.5, 0.01)]), slo=Slo(0.05, 0.99, throughput_iops=100.0)
    )
    plan = _plan(t, control={Stage.STORAGE: StageControl.pslo("LS+T")})
    for name, export in (
        ("qemu", lambda p: export_qemu(p, PROFILE)),
        ("cgroup", lambda p: export_cgroup(p, PROFILE, device="8:0")),
        ("nbdkit", lambda p: export_nbdkit(p, PROFILE)),
    ):
        e = export(plan)
        warned = [w for w in e.warnings if "pslo controller" in w.message]
        assert len(warned) == 1 and warned[0].inexact, name
        assert "policy LS+T" in warned[0].message and not e.exact
        assert not any("controller" in w.message for w in export(_plan(t)).warnings)
