"""A Plan's storage limits as the configuration of enforcement points users already run
(``tailbound export``; ``docs/enforcement.md``, "Exporters").

A storage token bucket ``(r, b)`` of the Plan is in **device-seconds**; QEMU, libvirt,
blk-throttle, librbd and nbdkit count bytes (and I/Os), so every exporter first converts
``(r, b)`` with :func:`~tailbound.enforce.byte_limits.convert` (``bytes+iops`` by default, or
``bytes``): whatever mix of the tenant's requests passes the converted limits over any ``T``
seconds costs at most ``r·T + b`` device-seconds. With a trace every exporter but ``cgroup`` adds
a note giving the share of ``r`` the tenant's own mix can use
(:func:`~tailbound.enforce.byte_limits.usable_share`).

Both round down: bytes and I/Os to integers (at least 1), nbdkit's bits and seconds likewise.

**Several buckets** (PriorityMeister's K buckets): a target with one bucket gets
``(min_i r_i, min_i b_i)``, which lies under every bucket's ``r_i·T + b_i`` (so it lets through no
more than the plan) and is the largest single bucket that does; the others are dropped with a
warning. A tenant without a storage limit gets no limit and a note; tenants on no device
(network only) and the plan's rejected tenants are listed in notes and get nothing.

What no target here can express (each an *inexact* warning, :attr:`ExportWarning.inexact`):
a device scheduler that tells its tenants apart — read from the device queue's scheduler as the
simulator and the gateway run it (:func:`tailbound.plan_queues.scheduler_config`), whatever its
kind: a per-tenant setting with several values on one device (priorities: QEMU serves a
throttle group's members round-robin, blk-throttle, librbd and nbdkit have no priority either;
EDF deadlines, DWRR service classes, ...) or weights (shares of the device, even equal ones) —,
the plan's dispatch rule (:class:`~tailbound.plan.DispatchRule`: MPLs, the low-priority rule),
demotion (traffic over its buckets is delayed, not demoted), a device's controller (PSLO's,
the plan's ``control.storage``, :func:`tailbound.plan_control.control_config`: its per-tenant
rates and depths change as the system runs; only ``tailbound-gate`` runs it). **Nested QoS**
(issue 25, ``docs/nested-qos.md``) is warned per tenant: its storage classes ``(σ, ρ, δ)``
(no target has a per-request classifier or deadlines; no limit is made of them, since Nested
QoS never delays a request and a limit would) and a graduated SLO (its grades, which one
bucket per tenant does not enforce), each named.

Per target:

- ``qemu`` — ``-drive`` throttling options and the QMP ``object-add`` of a throttle group per
  tenant (group = tenant name): ``bps-total = B``, ``bps-total-max = b·bw``,
  ``bps-total-max-length = 1`` (with length 1 the bucket holds ``max × 1 s`` bytes; QEMU's throttle
  is a leaky bucket used as a meter: a request passes while the bucket is not full, so a burst may
  exceed it by one request). QEMU rejects ``max < avg``: when ``b < r`` (under one second of rate)
  no max is emitted and QEMU's own bucket applies, ``avg / 10`` (``throttle_fix_bucket`` in QEMU's
  ``util/throttle.c``: ``bkt->max = bkt->avg / 10``), with a warning giving it in device-seconds.
  ``iops-total`` likewise in ``bytes+iops``.
- ``libvirt`` — the same limits as a disk's ``<iotune>`` (``total_bytes_sec``,
  ``total_bytes_sec_max``, ``total_bytes_sec_max_length``, ``total_iops_sec…``, ``group_name``):
  libvirt passes them to QEMU, with the same rule for ``b < r``.
- ``cgroup`` — cgroup v2 ``io.max`` lines ``MAJ:MIN rbps= wbps= riops= wiops=`` written to
  ``<root>/<tenant>/io.max``. blk-throttle caps reads and writes separately, so ``r`` and ``b``
  are split between them in the proportion of the trace's device-seconds of each (half and half
  without a trace; each operation at least 5% so that one the trace never shows is not shut
  out) and each part converted over that operation's requests; the split is a warning. There is
  **no burst setting**: blk-throttle lets a group dispatch what its rate allows over the current
  *slice*, rounded up to whole slices (``tg_within_bps_limit`` in ``block/blk-throttle.c``), and the
  slice is ``DFL_THROTL_SLICE_HD = HZ / 10``, 100 ms: an implicit bucket of about 0.1 s of rate,
  so a bucket ``b`` other than ``0.1·r`` is a warning (larger: bursts are held back; smaller: a
  burst may pass ``0.1·r`` device-seconds).
- ``ceph`` — ``rbd config image set <pool>/<image> …`` per tenant (image ``<pool>/<tenant>``
  unless told): ``rbd_qos_bps_limit = B``, ``rbd_qos_bps_burst = b·bw`` and
  ``rbd_qos_bps_burst_seconds = 1``, so burst × seconds = ``b·bw`` bytes, valid when
  ``burst ≥ limit`` (librbd's ``TokenBucketThrottle::set_limit`` refuses less). When ``b < r``
  the burst is set to the limit, the smallest librbd accepts, and the bucket is one second of
  rate, more than ``b``: a warning. ``rbd_qos_iops_*`` likewise. librbd refills its bucket every
  ``rbd_qos_schedule_tick_min`` (50 ms by default).
- ``nbdkit`` — the rate filter: ``nbdkit --filter=rate PLUGIN… rate=8·B`` (bits per second) and
  ``burstiness = b/r`` seconds (its bucket is ``rate × burstiness`` bits = ``b·bw`` bytes). It has
  no I/O limit: under ``bytes+iops`` the ``bytes`` conversion is used, with a note.

>>> import numpy as np
>>> from tailbound.model import Slo
>>> from tailbound.plan import Bound, Plan, StageLimit, TenantPlan
>>> from tailbound.profiles.tokens import SsdProfile
>>> from tailbound.stages import STORAGE_PATH, Stage
>>> profile = SsdProfile(sizes=np.array([4096.0, 65536.0]),
...                      read_bandwidth=np.array([40e6, 80e6]),
...                      write_bandwidth=np.array([20e6, 60e6]))
>>> t = TenantPlan("A", Slo(0.05), "s0", "ssd0", dict.fromkeys(STORAGE_PATH, 0),
...                {Stage.STORAGE: StageLimit(0.5, 2.0)}, Bound(0.04, "demo"))
>>> e = export_nbdkit(Plan("demo", 1, [t]), profile)
>>> print(e.text.strip())  # 0.5 × 20 MB/s (the slowest row) = 10 MB/s = 80 Mbit/s
nbdkit --filter=rate file A.img rate=80000000 burstiness=4
>>> e.exact
True
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tailbound.enforce.byte_limits import CONVERSIONS, ByteLimit, RequestMix, convert, usable_share
from tailbound.errors import ConfigError
from tailbound.plan import Plan, TenantPlan, device_name
from tailbound.plan_control import control_config
from tailbound.plan_queues import scheduler_config
from tailbound.profiles.tokens import SsdProfile
from tailbound.stages import Stage
from tailbound.traces.trace import Op, Trace

#: blk-throttle's slice (``DFL_THROTL_SLICE_HD = HZ / 10``): its implicit burst, in seconds.
BLK_THROTTLE_SLICE_S = 0.1
#: QEMU's bucket without a max: ``avg / 10`` (``throttle_fix_bucket``), in seconds of rate.
QEMU_DEFAULT_BUCKET_S = 0.1
#: The least share of ``r`` each operation gets in ``cgroup``'s read/write split.
MIN_OP_SHARE = 0.05
#: The cgroup directory tenants' groups are under unless told.
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup/tailbound"
#: The Ceph pool and image naming unless told (``{tenant}`` is replaced).
DEFAULT_POOL = "rbd"
DEFAULT_IMAGE = "{tenant}"
#: nbdkit's plugin and arguments unless told (``{tenant}`` is replaced).
DEFAULT_NBDKIT_PLUGIN = "file {tenant}.img"
_DEVICE_NUMBER = re.compile(r"^\d+:\d+$")


@dataclass(frozen=True)
class ExportWarning:
    """Something the target does differently from the plan (``inexact``: it cannot express the
    plan exactly, ``tailbound export`` exits 1), or a note that changes nothing (``inexact``
    false). ``tenant`` is ``None`` for the plan as a whole."""

    tenant: str | None
    message: str
    inexact: bool = True

    def __str__(self) -> str:
        kind = "warning" if self.inexact else "note"
        who = f"{self.tenant}: " if self.tenant else ""
        return f"{kind}: {who}{self.message}"


@dataclass(frozen=True)
class Export:
    """A target's configuration: ``text`` to write or run, ``config`` the same as data (one entry
    per tenant with a limit), and the ``warnings``."""

    target: str
    text: str
    config: list[dict[str, Any]]
    warnings: tuple[ExportWarning, ...] = ()

    @property
    def exact(self) -> bool:
        """Whether the target expresses the plan exactly (no inexact warning)."""
        return not any(w.inexact for w in self.warnings)


def _share_note(t: _Tenant, limit: ByteLimit, profile: SsdProfile) -> list[ExportWarning]:
    if t.mix is None:
        return []
    share = usable_share(limit, t.rate, profile, t.mix)
    return [
        ExportWarning(
            t.plan.name,
            f"its trace's mix can use {share:.1%} of its rate {_g(t.rate)} under these limits "
            "(the price of never exceeding it)",
            False,
        )
    ]


# ------------------------------------------------------------------------------ the plan's tenants
@dataclass(frozen=True)
class _Tenant:
    """A tenant with a storage limit: its single bucket and its request mix (if known)."""

    plan: TenantPlan
    rate: float
    bucket_s: float
    mix: RequestMix | None


@dataclass
class _Walk:
    """The tenants a target configures, and the warnings every target shares."""

    tenants: list[_Tenant] = field(default_factory=list)
    warnings: list[ExportWarning] = field(default_factory=list)


def _walk(
    plan: Plan, traces: Mapping[str, Trace] | None, *, target: str, plan_path: str | None
) -> _Walk:
    out = _Walk()
    traces = traces or {}
    for r in plan.rejected:
        out.warnings.append(ExportWarning(r.name, "not admitted by the plan: no limit", False))
    storage = [t for t in plan.tenants if t.device is not None]
    for t in plan.tenants:
        if t.device is None:
            out.warnings.append(ExportWarning(t.name, "network only (no device): no limit", False))
    by_device: dict[str, list[TenantPlan]] = {}
    for t in storage:
        by_device.setdefault(device_name(t), []).append(t)
    demotes = False
    for dev, ts in sorted(by_device.items()):
        scheduler = scheduler_config(plan, dev, ts, path=plan_path)
        demotes = demotes or scheduler.get("demotion") is True
        out.warnings.extend(
            ExportWarning(None, f"{dev}: {_lost(setting, n, scheduler['kind'], target)}")
            for setting, n in _distinctions(scheduler, len(ts))
        )
    if demotes:
        out.warnings.append(
            ExportWarning(None, f"{target} delays traffic over its limit; the plan demotes it")
        )
    for dev, ts in sorted(by_device.items()):
        control = control_config(plan, dev, ts, path=plan_path)
        if control is not None:
            out.warnings.append(
                ExportWarning(
                    None,
                    f"{dev}: {target} cannot run the plan's {control['kind']} controller "
                    f"(policy {control['policy']}: each tenant's rate and depth set from its "
                    "completions); only tailbound-gate does",
                )
            )
    rule = plan.dispatch
    set_fields = [k for k, v in rule.to_json().items() if v is not None]
    if storage and set_fields:
        out.warnings.append(
            ExportWarning(
                None, f"{target} cannot express the plan's dispatch rule ({', '.join(set_fields)})"
            )
        )
    for i, t in enumerate(plan.tenants):
        if t.device is None:
            continue
        out.warnings.extend(_graduated(t, target))
        buckets = t.buckets(Stage.STORAGE)
        if not buckets:
            note = ExportWarning(t.name, "no storage limit in the plan: none set", False)
            out.warnings.append(note)
            continue
        for rate, bucket in buckets:
            if not (math.isfinite(rate) and rate > 0 and math.isfinite(bucket) and bucket >= 0):
                raise ConfigError(
                    plan_path,
                    f"a storage bucket needs a positive rate and bucket, got ({rate}, {bucket})",
                    field=f"tenants[{i}].stages.storage",
                )
        rate = min(r for r, _ in buckets)
        bucket = min(b for _, b in buckets)
        if len(buckets) > 1:
            out.warnings.append(
                ExportWarning(
                    t.name,
                    f"{len(buckets)} storage buckets, {target} takes one: "
                    f"({_g(rate)}, {_g(bucket)} s), the smallest rate and bucket, under them all",
                )
            )
        trace = traces.get(t.name)
        out.tenants.append(
            _Tenant(t, rate, bucket, None if trace is None else RequestMix.from_trace(trace))
        )
    return out


def _graduated(t: TenantPlan, target: str) -> list[ExportWarning]:
    """The per-tenant warnings of Nested QoS (``docs/nested-qos.md``): a target here has one
    token bucket per tenant and no per-request classifier or deadline, so a tenant's storage
    classes ``(σ, ρ, δ)`` are lost (and no limit is made of them: Nested QoS never delays a
    request, a limit would), and a graduated SLO's grades are enforced by nothing the target
    runs (at most the tenant's bucket, planned for one latency)."""
    out = []
    classes = t.nested.get(Stage.STORAGE, ())
    if classes:
        listed = "; ".join(
            f"({_g(c.sigma_s)} s, {_g(c.rho)}, {_g(1e3 * c.delta_s)} ms)" for c in classes
        )
        out.append(
            ExportWarning(
                t.name,
                f"its {len(classes)} Nested QoS storage class{'es' if len(classes) > 1 else ''} "
                f"(sigma_s, rho, delta) = {listed} lost: {target} has no per-request "
                "classifier and no deadlines, so no request is served by its class's deadline, "
                "and no limit is set from them (Nested QoS never delays a request, a limit "
                "would); the plan needs tailbound gate",
            )
        )
    if t.slo is not None and t.slo.is_graduated:
        grades = ", ".join(f"{f:.4g} within {_g(1e3 * d)} ms" for d, f in t.slo.grades)
        out.append(
            ExportWarning(
                t.name,
                f"its graduated SLO ({grades}) is not enforced grade by grade: {target} "
                "expresses at most one token bucket per tenant",
            )
        )
    return out


#: What a scheduler's per-workload setting is called in a warning (the core's serde field names;
#: any other field is called by its name).
_SETTING_NAMES = {
    "weight": "weights",
    "deadline": "deadlines",
    "class": "service classes",
    "classes": "Nested QoS classes",
}


def _distinctions(scheduler: dict[str, Any], tenants: int) -> list[tuple[str, int]]:
    """The per-workload settings of a device's scheduler (the core's serde form, a list with an
    entry per tenant) that tell its tenants apart, with their numbers of distinct values: a
    setting with several values, or a weight (a share of the device, which per-tenant limits do
    not give even when equal). Buckets are left out (they are what the exporters set), and so
    are the weights of a scheduler of service classes (``class``): they are per class, and the
    classes tell the tenants apart."""
    if tenants < 2:
        return []
    skip = {"buckets", "weight"} if "class" in scheduler else {"buckets"}
    found = []
    for setting, values in scheduler.items():
        if setting in skip or not isinstance(values, list) or len(values) != tenants:
            continue
        distinct = len({json.dumps(v) for v in values})
        if distinct > 1 or setting == "weight":
            found.append((setting, distinct))
    return found


def _lost(setting: str, distinct: int, kind: str, target: str) -> str:
    """The warning for a ``setting`` of ``kind`` scheduling that ``target`` cannot express."""
    if setting == "priority":
        return (
            f"the plan's storage priorities ({distinct} levels) are lost: {target} has no "
            "priority between tenants"
        )
    what = _SETTING_NAMES.get(setting, setting)
    return f"{target} cannot express the plan's {what} ({kind} scheduling)"


def _g(x: float) -> str:
    return f"{x:.4g}"


def _down(x: float) -> int:
    """Round a limit down to an integer, at least 1 (a 0 means "no limit" to most targets)."""
    return max(1, math.floor(x))


def _secs_down(x: float) -> float:
    """Seconds rounded down to 6 significant digits (nbdkit's burstiness)."""
    if x <= 0:
        return 0.0
    scale = 10.0 ** (5 - math.floor(math.log10(x)))
    return math.floor(x * scale) / scale


def _qemu_limits(
    t: _Tenant, profile: SsdProfile, conversion: str, target: str
) -> tuple[dict[str, int], list[ExportWarning]]:
    """The throttle limits of QEMU (libvirt passes them on): ``total`` bytes and I/Os with a
    max of one second's length when the bucket allows it."""
    lim = convert(t.rate, t.bucket_s, profile, t.mix, conversion)
    warnings = _share_note(t, lim, profile)
    out: dict[str, int] = {}
    pairs = [("bps", lim.bytes_per_s, lim.bucket_bytes)]
    if lim.iops is not None and lim.bucket_ios is not None:
        pairs.append(("iops", lim.iops, lim.bucket_ios))
    for unit, avg, bucket in pairs:
        avg_i, bucket_i = _down(avg), math.floor(bucket)
        out[f"{unit}-total"] = avg_i
        if bucket_i >= avg_i:
            out[f"{unit}-total-max"] = bucket_i
            out[f"{unit}-total-max-length"] = 1
    if "bps-total-max" not in out:  # b < r: under one second of its rate
        default = QEMU_DEFAULT_BUCKET_S * t.rate
        more = "more" if default > t.bucket_s else "less"
        warnings.append(
            ExportWarning(
                t.plan.name,
                f"bucket {_g(t.bucket_s)} s is under one second of its rate {_g(t.rate)} and "
                f"{target} refuses a max below the average: no max is set, so its bucket is "
                f"average/10 = {_g(default)} device-seconds ({more} than the plan's)",
            )
        )
    return out, warnings


def export_qemu(
    plan: Plan,
    profile: SsdProfile,
    traces: Mapping[str, Trace] | None = None,
    *,
    conversion: str = CONVERSIONS[0],
    plan_path: str | None = None,
) -> Export:
    """Per tenant a QEMU throttle group named after it: the ``-drive`` options and the QMP
    ``object-add`` (module documentation, ``qemu``)."""
    walk = _walk(plan, traces, target="qemu", plan_path=plan_path)
    lines, config = [], []
    for t in walk.tenants:
        limits, warnings = _qemu_limits(t, profile, conversion, "QEMU")
        walk.warnings.extend(warnings)
        drive = ",".join(
            [f"throttling.{k}={v}" for k, v in limits.items()] + [f"throttling.group={t.plan.name}"]
        )
        qmp = {
            "execute": "object-add",
            "arguments": {"qom-type": "throttle-group", "id": t.plan.name, "limits": limits},
        }
        lines += [f"# {t.plan.name}: -drive …,{drive}", json.dumps(qmp)]
        config.append({"tenant": t.plan.name, "group": t.plan.name, "limits": limits, "qmp": qmp})
    return Export("qemu", _text(lines), config, tuple(walk.warnings))


def export_libvirt(
    plan: Plan,
    profile: SsdProfile,
    traces: Mapping[str, Trace] | None = None,
    *,
    conversion: str = CONVERSIONS[0],
    plan_path: str | None = None,
) -> Export:
    """Per tenant the ``<iotune>`` element of its disk (module documentation, ``libvirt``)."""
    walk = _walk(plan, traces, target="libvirt", plan_path=plan_path)
    names = {"bps": "total_bytes_sec", "iops": "total_iops_sec"}
    lines, config = [], []
    for t in walk.tenants:
        limits, warnings = _qemu_limits(t, profile, conversion, "libvirt (QEMU)")
        walk.warnings.extend(warnings)
        iotune: dict[str, Any] = {}
        for key, value in limits.items():
            unit, rest = key.split("-total")
            iotune[names[unit] + rest.replace("-", "_")] = value
        iotune["group_name"] = t.plan.name
        body = "".join(f"<{k}>{v}</{k}>" for k, v in iotune.items())
        lines += [f"<!-- {t.plan.name} -->", f"<iotune>{body}</iotune>"]
        config.append({"tenant": t.plan.name, "iotune": iotune})
    return Export("libvirt", _text(lines), config, tuple(walk.warnings))


def export_cgroup(
    plan: Plan,
    profile: SsdProfile,
    traces: Mapping[str, Trace] | None = None,
    *,
    device: str,
    root: str = DEFAULT_CGROUP_ROOT,
    conversion: str = CONVERSIONS[0],
    plan_path: str | None = None,
) -> Export:
    """Per tenant the cgroup v2 ``io.max`` line of ``device`` (``MAJ:MIN``), as a shell command
    writing it to ``<root>/<tenant>/io.max`` (module documentation, ``cgroup``)."""
    if not _DEVICE_NUMBER.match(device or ""):
        raise ConfigError(None, f"expected MAJ:MIN (e.g. 259:0), got {device!r}", field="--device")
    walk = _walk(plan, traces, target="cgroup io.max", plan_path=plan_path)
    lines, config = [], []
    for t in walk.tenants:
        read_share = 0.5
        if t.mix is not None:
            cost = t.mix.count * t.mix.size / profile.bandwidth(t.mix.op, t.mix.size)
            read_share = float(cost[t.mix.op == Op.READ].sum() / cost.sum())
        read_share = min(1 - MIN_OP_SHARE, max(MIN_OP_SHARE, read_share))
        values: dict[str, int] = {}
        for op, share, p in ((Op.READ, read_share, "r"), (Op.WRITE, 1 - read_share, "w")):
            mix = None if t.mix is None else t.mix.only(op)
            lim = convert(share * t.rate, share * t.bucket_s, profile, mix, conversion, op)
            values[f"{p}bps"] = _down(lim.bytes_per_s)
            if lim.iops is not None:
                values[f"{p}iops"] = _down(lim.iops)
        values = {k: values[k] for k in ("rbps", "wbps", "riops", "wiops") if k in values}
        line = f"{device} " + " ".join(f"{k}={v}" for k, v in values.items())
        path = f"{root.rstrip('/')}/{t.plan.name}/io.max"
        lines.append(f"echo {shlex.quote(line)} > {shlex.quote(path)}")
        config.append({"tenant": t.plan.name, "path": path, "line": line, "read_share": read_share})
        walk.warnings.append(
            ExportWarning(
                t.plan.name,
                f"io.max caps reads and writes apart: {read_share:.0%} of the rate to reads, "
                f"{1 - read_share:.0%} to writes "
                f"({'from its trace' if t.mix is not None else 'no trace: half each'})",
            )
        )
        allowance = BLK_THROTTLE_SLICE_S * t.rate
        if not math.isclose(t.bucket_s, allowance, rel_tol=1e-9):
            effect = (
                "bursts are held back more than planned"
                if t.bucket_s > allowance
                else "a burst may pass more than the plan's bucket"
            )
            walk.warnings.append(
                ExportWarning(
                    t.plan.name,
                    f"io.max has no burst setting: bucket {_g(t.bucket_s)} s becomes "
                    f"blk-throttle's slice allowance, about {_g(allowance)} device-seconds "
                    f"(0.1 s of rate): {effect}",
                )
            )
    return Export("cgroup", _text(lines), config, tuple(walk.warnings))


def export_ceph(
    plan: Plan,
    profile: SsdProfile,
    traces: Mapping[str, Trace] | None = None,
    *,
    pool: str = DEFAULT_POOL,
    image: str = DEFAULT_IMAGE,
    conversion: str = CONVERSIONS[0],
    plan_path: str | None = None,
) -> Export:
    """Per tenant the ``rbd config image set`` commands of its librbd QoS (module
    documentation, ``ceph``); ``image`` may name the tenant as ``{tenant}``."""
    if not pool or "/" in pool:
        raise ConfigError(None, f"expected a pool name without '/', got {pool!r}", field="--pool")
    walk = _walk(plan, traces, target="ceph librbd", plan_path=plan_path)
    lines, config = [], []
    for t in walk.tenants:
        lim = convert(t.rate, t.bucket_s, profile, t.mix, conversion)
        walk.warnings.extend(_share_note(t, lim, profile))
        spec = f"{pool}/{image.replace('{tenant}', t.plan.name)}"
        settings: dict[str, int] = {}
        pairs = [("bps", lim.bytes_per_s, lim.bucket_bytes)]
        if lim.iops is not None and lim.bucket_ios is not None:
            pairs.append(("iops", lim.iops, lim.bucket_ios))
        raised = False
        for unit, avg, bucket in pairs:
            avg_i = _down(avg)
            raised |= unit == "bps" and math.floor(bucket) < avg_i
            settings[f"rbd_qos_{unit}_limit"] = avg_i
            settings[f"rbd_qos_{unit}_burst"] = max(avg_i, math.floor(bucket))
            settings[f"rbd_qos_{unit}_burst_seconds"] = 1
        if raised:  # b < r: under one second of its rate
            walk.warnings.append(
                ExportWarning(
                    t.plan.name,
                    f"bucket {_g(t.bucket_s)} s is under one second of its rate {_g(t.rate)} and "
                    "librbd refuses a burst below the limit: burst = limit, a bucket of "
                    f"{_g(t.rate)} device-seconds (more than the plan's)",
                )
            )
        for key, value in settings.items():
            lines.append(f"rbd config image set {shlex.quote(spec)} {key} {value}")
        config.append({"tenant": t.plan.name, "image": spec, "settings": settings})
    return Export("ceph", _text(lines), config, tuple(walk.warnings))


def export_nbdkit(
    plan: Plan,
    profile: SsdProfile,
    traces: Mapping[str, Trace] | None = None,
    *,
    plugin: str = DEFAULT_NBDKIT_PLUGIN,
    conversion: str = CONVERSIONS[0],
    plan_path: str | None = None,
) -> Export:
    """Per tenant an ``nbdkit --filter=rate`` command line (module documentation, ``nbdkit``);
    ``plugin`` is the plugin and its arguments, ``{tenant}`` naming the tenant."""
    walk = _walk(plan, traces, target="nbdkit", plan_path=plan_path)
    if conversion != "bytes" and walk.tenants:
        walk.warnings.append(
            ExportWarning(None, "nbdkit's rate filter has no I/O limit: bytes conversion", False)
        )
    lines, config = [], []
    for t in walk.tenants:
        lim = convert(t.rate, t.bucket_s, profile, t.mix, "bytes")
        walk.warnings.extend(_share_note(t, lim, profile))
        bits = _down(8 * lim.bytes_per_s)
        burstiness = _secs_down(8 * lim.bucket_bytes / bits)
        args = shlex.split(plugin.replace("{tenant}", t.plan.name))
        argv = ["nbdkit", "--filter=rate", *args, f"rate={bits}", f"burstiness={burstiness:g}"]
        lines.append(shlex.join(argv))
        config.append(
            {"tenant": t.plan.name, "rate_bits": bits, "burstiness_s": burstiness, "argv": argv}
        )
    return Export("nbdkit", _text(lines), config, tuple(walk.warnings))


def _text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


#: Every exporter by target name (``tailbound export TARGET``).
EXPORTERS: dict[str, Callable[..., Export]] = {
    "qemu": export_qemu,
    "libvirt": export_libvirt,
    "cgroup": export_cgroup,
    "ceph": export_ceph,
    "nbdkit": export_nbdkit,
}
