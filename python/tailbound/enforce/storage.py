"""The storage stage of a Plan as the configuration of ``tailbound-gate``, the NBD storage gateway
(``crates/tailbound-gate``; ``docs/enforcement.md``, "Storage path").

One gateway serves one device of the plan (``<server>.<device>``,
:func:`~tailbound.plan.device_name`): one NBD export per tenant placed on it (export name =
tenant name, backed by ``<backend>/<tenant>.img``), and one dispatcher —
``tailbound_core::sched::dispatch::Dispatcher``, the simulator's own — in front of the backend.
The mapping is the scenario builder's (:mod:`tailbound.sim.plan`), so the gateway runs the queue
``tailbound verify`` replays:

- the scheduler is the device queue's of the one translation of a plan into schedulers
  (:func:`tailbound.plan_queues.scheduler_config`, which the simulator's scenario uses too), in
  the core's serde form with the workloads in export order: any kind of the core's — strict
  priority with each tenant's :func:`~tailbound.plan.enforcer_level` and every storage bucket
  ``(rate, bucket_s)`` in device-seconds (the limit mode's ``demotion`` flag), FIFO, DWRR over
  the tenants' storage service classes, SFQ (storage weights), EDF (storage deadlines, else the
  SLO, else 1 s), ...;
- a tenant's Nested QoS classes (``docs/nested-qos.md``) are the ``nested`` kind's
  ``classes``; a tenant giving classes on a device whose scheduler does not read them (any
  other kind) is refused, naming ``tenants[i].nested.storage``, rather than served without them;
- each request costs ``size / bandwidth(op, size)`` seconds, the profile's bandwidth table
  interpolated as :class:`~tailbound.profiles.tokens.SsdModel` does (the gateway computes it);
- the dispatch limits are the profile's (MPLs, outstanding bytes) overridden by the plan's
  :class:`~tailbound.plan.DispatchRule` (read/write MPL, ``low_priority_mpl``,
  ``low_priority_work_s``, ``level_mpl``), as :func:`tailbound.sim.plan.scenario_from_plan` does;
- a plan whose storage stage has a controller (PSLO's, ``control.storage``) gives the
  configuration a ``control``: :func:`tailbound.plan_control.control_config` of the device, the
  core's ``sim::control::ControlSpec`` in its serde form with the workloads in export order —
  the same serde the simulator reads for a device's ``control`` (absent without a controller,
  and with ``fifo``, the unenforced baseline).

>>> import numpy as np
>>> from tailbound.model import Slo
>>> from tailbound.plan import Bound, DispatchRule, Plan, StageLimit, TenantPlan
>>> from tailbound.profiles.tokens import SsdProfile
>>> from tailbound.stages import STORAGE_PATH, Stage
>>> def tenant(name, level, limit=None):
...     limits = {Stage.STORAGE: limit} if limit else {}
...     return TenantPlan(name, Slo(0.05), "s0", "ssd0", dict.fromkeys(STORAGE_PATH, level),
...                       limits, Bound(0.04, "demo"))
>>> plan = Plan("demo", 1, [tenant("A", 0), tenant("B", 1, StageLimit(0.5, 0.01))],
...             dispatch=DispatchRule(read_mpl=2, low_priority_mpl=0))
>>> profile = SsdProfile(sizes=np.array([4096.0]), read_bandwidth=np.array([8e7]),
...                      write_bandwidth=np.array([4e7]))
>>> c = gate_config(plan, profile, backend_dir="/srv/gate")
>>> c["exports"], c["scheduler"]["priority"], c["scheduler"]["buckets"]
(['A', 'B'], [8, 7], [[], [[0.5, 0.01]]])
>>> c["limits"]["read_mpl"], c["limits"]["write_mpl"], c["limits"]["low_priority_mpl"]
(2, 96, 0)
"""

from __future__ import annotations

import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

from tailbound.errors import ConfigError
from tailbound.plan import Plan, device_name
from tailbound.plan_control import control_config
from tailbound.plan_queues import scheduler_config
from tailbound.profiles.tokens import SsdProfile
from tailbound.stages import Stage

#: Export names the gateway accepts (they are file names in the backend directory too).
EXPORT_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$")
#: The gateway's largest request unless told (32 MiB: what Linux's nbd driver and libnbd send).
DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024
#: The largest request the gateway may be told to serve (its frame length is 32 bits).
MAX_REQUEST_LIMIT = 2**31
#: A regular file's block size with ``--direct`` (``crates/tailbound-gate/src/file.rs``).
DIRECT_BLOCK = 4096
#: The binary's name; :func:`find_binary` looks for it.
BINARY = "tailbound-gate"


def storage_device(plan: Plan, device: str | None, *, path: str | None = None) -> str:
    """The device (``<server>.<device>``) the gateway serves: ``device``, or the plan's only one."""
    devices = sorted({device_name(t) for t in plan.tenants if t.device is not None})
    if device is not None:
        if device not in devices:
            raise ConfigError(
                path, f"no tenant is placed on device {device!r} (the plan's: {devices})"
            )
        return device
    if not devices:
        raise ConfigError(path, "no tenant of the plan has a storage device", field="tenants")
    if len(devices) > 1:
        raise ConfigError(
            None, f"the plan uses devices {devices}: choose one with --device", field="--device"
        )
    return devices[0]


def gate_config(
    plan: Plan,
    profile: SsdProfile,
    *,
    backend_dir: str | Path,
    listen: str = "127.0.0.1:10809",
    device: str | None = None,
    export_size: int = 1 << 30,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    fifo: bool = False,
    emulate_device: bool = False,
    metrics_listen: str | None = None,
    upstream: str | None = None,
    direct: bool = False,
    drain_timeout_s: float = 10.0,
    plan_path: str | None = None,
) -> dict[str, Any]:
    """The gateway's configuration document for ``plan``'s tenants on ``device`` (see the module
    documentation). ``fifo`` replaces the plan's discipline by one FIFO queue under the same
    dispatch limits (no priorities, no buckets: the unenforced baseline); ``emulate_device``
    holds each request's slot until a unit-rate device would have served it for its cost;
    ``metrics_listen`` (``HOST:PORT``) serves per-export counters and latency histograms in
    Prometheus' text format at ``/metrics``; ``upstream`` (``HOST:PORT``) serves each export
    from the export of the same name on that NBD server instead of a file (its size is the
    upstream's); ``direct`` opens the backend files or block devices with ``O_DIRECT``;
    ``drain_timeout_s`` bounds the drain on SIGTERM."""
    if not (math.isfinite(drain_timeout_s) and drain_timeout_s >= 0):
        raise ConfigError(
            None, f"must be a non-negative number, got {drain_timeout_s}", field="--drain-timeout"
        )
    if direct and export_size % DIRECT_BLOCK:
        raise ConfigError(
            None,
            f"with --direct the export size must be a multiple of {DIRECT_BLOCK}, got "
            f"{export_size}",
            field="--export-size",
        )
    if not 0 < export_size < 2**63:
        raise ConfigError(None, f"must be positive, got {export_size}", field="--export-size")
    if not 0 < max_request_bytes <= MAX_REQUEST_LIMIT:
        raise ConfigError(
            None,
            f"must be in 1..{MAX_REQUEST_LIMIT}, got {max_request_bytes}",
            field="--max-request",
        )
    dev = storage_device(plan, device, path=plan_path)
    tenants = [t for t in plan.tenants if t.device is not None and device_name(t) == dev]
    for i, t in enumerate(plan.tenants):
        if t in tenants and not EXPORT_NAME.match(t.name):
            raise ConfigError(
                plan_path,
                f"{t.name!r} cannot be an export name ([A-Za-z0-9._-], not starting with '.')",
                field=f"tenants[{i}].name",
            )
    scheduler = (
        {"kind": "fifo"}
        if fifo
        else scheduler_config(plan, dev, tenants, path=plan_path)  # the simulator's queue
    )
    for i, t in enumerate(plan.tenants):
        if not fifo and t in tenants and t.nested.get(Stage.STORAGE) and "classes" not in scheduler:
            raise ConfigError(
                plan_path,
                f"tenant {t.name} has Nested QoS classes but device {dev} is scheduled "
                f"{scheduler['kind']!r}, which ignores them: its classes would not be enforced "
                "(schedule the storage stage 'nested', as tailbound admit --policy nested-qos "
                "does)",
                field=f"tenants[{i}].nested.storage",
            )
    rule = plan.dispatch
    limits = {
        "read_mpl": rule.read_mpl if rule.read_mpl is not None else profile.read_mpl,
        "write_mpl": rule.write_mpl if rule.write_mpl is not None else profile.write_mpl,
        "max_read_bytes": float(profile.max_outstanding_read_bytes),
        "max_write_bytes": float(profile.max_outstanding_write_bytes),
        "low_priority_mpl": rule.low_priority_mpl,
        "low_priority_work": rule.low_priority_work_s,
    }
    if rule.level_mpl is not None:  # older gateway configurations have no such key
        limits["level_mpl"] = rule.level_mpl
    control = None if fifo else control_config(plan, dev, tenants, path=plan_path)
    config = {
        "listen": listen,
        "backend_dir": str(backend_dir),
        "export_size": int(export_size),
        "max_request_bytes": int(max_request_bytes),
        "exports": [t.name for t in tenants],
        "scheduler": scheduler,
        "limits": limits,
        "profile": {
            "sizes": [float(s) for s in profile.sizes],
            "read_bandwidth": [float(b) for b in profile.read_bandwidth],
            "write_bandwidth": [float(b) for b in profile.write_bandwidth],
        },
        "emulate_device": emulate_device,
        "metrics_listen": metrics_listen,
        "upstream": upstream,
        "direct": direct,
        "drain_timeout_s": float(drain_timeout_s),
    }
    if control is not None:
        config["control"] = control
    return config


#: What a hot reload keeps from the running gateway's configuration (the gateway refuses a
#: reload that changes them: they need a restart).
FIXED_ON_RELOAD = (
    "listen",
    "metrics_listen",
    "backend_dir",
    "export_size",
    "upstream",
    "direct",
    "max_request_bytes",
)


def reload_config(new: dict[str, Any], running: dict[str, Any]) -> dict[str, Any]:
    """``new`` (a :func:`gate_config` document) with the fields a reload cannot change taken
    from the ``running`` gateway's configuration.

    >>> reload_config({"listen": "a:1", "exports": ["B"]}, {"listen": "a:0", "exports": ["A"]})
    {'listen': 'a:0', 'exports': ['B']}
    """
    return {**new, **{k: running[k] for k in FIXED_ON_RELOAD if k in running}}


def gateway_pid(pid_file: Path) -> int:
    """The pid of the running gateway that wrote ``pid_file`` (checked to be a live
    ``tailbound-gate`` process, so a stale file never signals another program)."""
    try:
        text = pid_file.read_text().strip()
    except OSError as e:
        raise ConfigError(pid_file, f"no running gateway's pid file: {e.strerror}") from None
    if not text.isdigit():
        raise ConfigError(pid_file, f"not a process id: {text[:40]!r}")
    pid = int(text)
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        raise ConfigError(pid_file, f"process {pid} is not running (stale pid file)") from None
    argv0 = cmdline.split(b"\0", 1)[0].decode(errors="replace")
    if Path(argv0).name != BINARY:
        raise ConfigError(pid_file, f"process {pid} is {argv0!r}, not {BINARY} (stale pid file)")
    return pid


def find_binary(explicit: str | Path | None = None) -> Path:
    """The gateway's binary: ``explicit``, ``$TAILBOUND_GATE``, ``tailbound-gate`` on the PATH, or
    the checkout's ``target/release/tailbound-gate`` (``make install`` builds it)."""
    candidates: list[Path] = []
    if explicit is not None:
        candidates.append(Path(explicit))
    elif os.environ.get("TAILBOUND_GATE"):
        candidates.append(Path(os.environ["TAILBOUND_GATE"]))
    else:
        on_path = shutil.which(BINARY)
        if on_path:
            candidates.append(Path(on_path))
        candidates.append(Path(__file__).resolve().parents[3] / "target" / "release" / BINARY)
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise ConfigError(
        None,
        f"no {BINARY} binary at {[str(c) for c in candidates]} (build it with `make install` or "
        f"`cargo build --release -p {BINARY}`)",
        field="--binary",
    )
