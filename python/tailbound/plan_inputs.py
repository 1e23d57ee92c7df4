"""What a :class:`~tailbound.plan.Plan` was planned from, so that it stands alone (plan format
version 3; ``docs/architecture.md``, "The Plan").

A consumer of a Plan (``verify``, ``prioritize``, ``enforce replay``, an agent on another host)
needs each tenant's trace, the device profile and the link bandwidth the Plan was decided with.
:class:`PlanInputs` records them: per tenant a :class:`TraceRef` (the file's path, the SHA-256 of
its bytes and its format), and for the plan the SSD (or disk) profile **embedded** as its JSON
document (profiles are a few kB to tens of kB) and the link bandwidth in bytes/s. In the JSON
form the trace goes in each tenant's entry and the rest in the plan's ``inputs``::

    {"format": "tailbound-plan", "version": 3, ...,
     "inputs": {"link_bandwidth_bytes_per_s": 125000000.0,
                "profile": {"type": "storageSSD", "bandwidthTable": [...], ...}},  # or null
     "tenants": [{"name": "C0", ...,
                  "trace": {"path": "traces/trace0000.txt", "sha256": "3f1c…", "format": "wc"}}]}

**Paths.** A trace inside the plan file's folder (or below it) is written relative to that
folder, so a plan copied or moved together with its traces keeps working; any other trace is
written as an absolute path, so the plan file alone can be moved (a shared data set stays where
it is). Relative paths are read relative to the plan file, whatever the working directory.

**Staleness.** A consumer checks every trace it uses against its recorded hash
(:func:`resolve_inputs`): a missing or changed file is a :class:`ConfigError` naming the plan
file and the field (``tenants[3].trace.sha256``) before anything runs or is written. Hashes are
computed once per process per file (:func:`file_sha256` keeps them by path, size, modification
time and inode), so a multi-GB trace is not hashed twice by one verb.

**A characterisation instead of a trace.** A tenant may be planned from its characterisation
given directly (the control plane accepts one: docs/service.md) rather than from a trace: its
entry then records ``characterisation`` (:func:`check_characterisation`: per stage the r-b
curve in the stage's utilisation and seconds of work, with the long-run rate, and the largest
read and write in bytes for the storage stage's blocking term) instead of ``trace``, so the plan
still stands alone for what the analysis needs; a consumer that replays requests (``verify``,
``prioritize``, ``enforce replay``) has none to replay and says so, naming the entry, unless
``--tenants`` gives a trace for it::

    "tenants": [{"name": "C9", ...,
                 "characterisation": {"stages": {"net_in": {"mean_rate": 0.01,
                                                            "points": [[0.02, 0.004], ...]},
                                                 "storage": {...}, "net_out": {...}},
                                      "largest_read_bytes": 131072,
                                      "largest_write_bytes": 65536}}]

**Overrides.** ``--tenants FILE`` replaces the recorded traces, joined to the plan's tenants by
name as before version 3; ``--profile FILE`` the embedded profile; ``--link-bandwidth`` the
recorded bandwidth. A plan of version 1 or 2, or one built in memory and saved without inputs
(an experiment's), records none: its consumers need ``--tenants`` (and ``--profile``) as before.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailbound.errors import ConfigError, TraceFormatError
from tailbound.jsonio import read_json
from tailbound.model import TenantSet, load_tenants

if TYPE_CHECKING:
    from tailbound.plan import Plan

#: Bytes read at a time when hashing a trace.
_CHUNK = 1 << 20
#: A file modified this recently (s) is hashed again on every request (:func:`file_sha256`).
_RACY_S = 2.0
_HEX64 = re.compile(r"[0-9a-f]{64}")
TRACE_KEYS = frozenset({"path", "sha256", "format"})
INPUTS_KEYS = frozenset({"link_bandwidth_bytes_per_s", "profile"})
CHARACTERISATION_KEYS = frozenset(
    {"stages", "largest_read_bytes", "largest_write_bytes", "largest_work_s"}
)
#: The stages a characterisation describes (a storage request's path: ``stages.STORAGE_PATH``).
CHARACTERISED_STAGES = ("net_in", "storage", "net_out")
#: Points an r-b curve of a characterisation may have.
MAX_CURVE_POINTS = 10_000


# ------------------------------------------------------------------------------ hashing
def file_sha256(path: str | Path) -> str:
    """The SHA-256 (hex) of the bytes of ``path``, computed once per process for a file whose
    path, size, modification time (ns) and inode are unchanged.

    File times tick coarsely (a kernel clock tick, a few ms), so a file rewritten within one tick
    of being hashed keeps its key: as git does for its "racy" index entries, a file modified less
    than :data:`_RACY_S` seconds ago is hashed every time, never taken from the cache.

    Raises :class:`OSError` when the file cannot be read.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> _ = p.write_bytes(b"abc")
    >>> file_sha256(p)[:16]
    'ba7816bf8f01cfea'
    """
    p = os.path.abspath(path)
    st = os.stat(p)
    if time.time_ns() - st.st_mtime_ns < _RACY_S * 1e9:
        return _digest(p)
    return _sha256(p, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


@lru_cache(maxsize=4096)
def _sha256(path: str, size: int, mtime_ns: int, ino: int, dev: int) -> str:
    """:func:`_digest`, kept by the file's identity and state."""
    return _digest(path)


def _digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


# ------------------------------------------------------------------------------ characterisations
def check_characterisation(doc: Any, where: str, path: str | None = None) -> dict[str, Any]:
    """A tenant's characterisation given instead of its trace (module docstring), checked and
    normalised (numbers as floats); :class:`ConfigError` naming ``path`` and the field under
    ``where`` (``body.characterisation.stages.storage.points[2]``) otherwise.

    Per stage of :data:`CHARACTERISED_STAGES`: ``mean_rate``, the long-run utilisation of the
    stage's queue (work-seconds per second, in (0, 1]), and ``points``, the r-b curve as
    ``[rate, bucket_s]`` pairs: rates utilisations, strictly increasing, the first at least the
    mean rate (below it no bucket suffices; rounding of 1e-9 relative allowed); buckets seconds
    of work, non-negative and non-increasing (``characterize.RbCurve``). ``largest_read_bytes`` and
    ``largest_write_bytes`` (>= 0): the largest request of each kind, the storage stage's
    blocking term; optionally ``largest_work_s`` (>= 0), the largest request's work on the
    device in seconds (the DNC baselines' blocking term; without it they price the largest read
    and write). The other families' forms (Nested QoS's classes, SNC's MMBPs) are
    :mod:`tailbound.characterisation_forms`'.

    >>> c = {"stages": {s: {"mean_rate": 0.1, "points": [[0.2, 0.01], [0.5, 0.002]]}
    ...      for s in CHARACTERISED_STAGES}, "largest_read_bytes": 4096, "largest_write_bytes": 0}
    >>> check_characterisation(c, "c")["stages"]["storage"]["points"]
    [[0.2, 0.01], [0.5, 0.002]]
    >>> c["stages"]["storage"]["points"] = [[0.5, 0.01], [0.2, 0.002]]
    >>> try:
    ...     check_characterisation(c, "c")
    ... except ConfigError as e:
    ...     print(e.field)
    c.stages.storage.points[1]
    """

    from tailbound import characterisation_forms as forms

    def fail(field: str, message: str) -> ConfigError:
        return ConfigError(path, message, field=f"{where}.{field}" if field else where)

    def number(value: Any, field: str, low: float, high: float = math.inf) -> float:
        return forms.number(fail, value, field, low, high)

    if not isinstance(doc, dict):
        raise fail("", f"expected an object, got {doc!r}")

    if forms.kind(doc) != "rb":  # Nested QoS's classes or an SNC tenant's MMBPs
        return forms.check_form(doc, fail)
    unknown = sorted(str(k) for k in doc if k not in CHARACTERISATION_KEYS)
    if unknown:
        known = ", ".join(sorted(CHARACTERISATION_KEYS))
        raise fail(unknown[0], f"unknown key (known: {known})")
    stages = doc.get("stages")
    if not isinstance(stages, dict):
        raise fail("stages", f"expected an object of {', '.join(CHARACTERISED_STAGES)}")
    out_stages: dict[str, Any] = {}
    for name in sorted(stages):
        if name not in CHARACTERISED_STAGES:
            raise fail(
                f"stages.{name}", f"unknown stage (known: {', '.join(CHARACTERISED_STAGES)})"
            )
    for name in CHARACTERISED_STAGES:
        at = f"stages.{name}"
        stage = stages.get(name)
        if not isinstance(stage, dict):
            raise fail(at, f"missing or not an object: {stage!r}")
        extra = sorted(str(k) for k in stage if k not in ("mean_rate", "points"))
        if extra:
            raise fail(f"{at}.{extra[0]}", "unknown key (known: mean_rate, points)")
        mean = number(stage.get("mean_rate"), f"{at}.mean_rate", 0.0, 1.0)
        if mean <= 0:
            raise fail(f"{at}.mean_rate", "expected a positive utilisation, got 0")
        points = stage.get("points")
        if not isinstance(points, list) or not 0 < len(points) <= MAX_CURVE_POINTS:
            raise fail(
                f"{at}.points",
                f"expected a list of 1 to {MAX_CURVE_POINTS} [rate, bucket_s] pairs",
            )
        curve: list[list[float]] = []
        for i, pair in enumerate(points):
            here = f"{at}.points[{i}]"
            if not isinstance(pair, list) or len(pair) != 2:
                raise fail(here, f"expected [rate, bucket_s], got {pair!r}")
            rate = number(pair[0], here, 0.0)
            bucket = number(pair[1], here, 0.0)
            if i == 0 and rate < mean * (1 - 1e-9):  # rbGen's first rate is the mean
                raise fail(here, f"the first rate {rate:g} is below the mean rate {mean:g}")
            if curve and rate <= curve[-1][0]:
                raise fail(here, "rates must be strictly increasing")
            if curve and bucket > curve[-1][1]:
                raise fail(here, "buckets must be non-increasing as the rate grows")
            curve.append([rate, bucket])
        out_stages[name] = {"mean_rate": mean, "points": curve}
    out = {
        "stages": out_stages,
        "largest_read_bytes": number(doc.get("largest_read_bytes"), "largest_read_bytes", 0.0),
        "largest_write_bytes": number(doc.get("largest_write_bytes"), "largest_write_bytes", 0.0),
    }
    if "largest_work_s" in doc:  # the DNC baselines' blocking term at the device (s)
        out["largest_work_s"] = number(doc["largest_work_s"], "largest_work_s", 0.0)
    return out


# ------------------------------------------------------------------------------ values
@dataclass(frozen=True)
class TraceRef:
    """A tenant's trace: ``path`` (absolute once read from a plan file), the SHA-256 of its
    bytes, and its format (a key of :data:`tailbound.traces.FORMATS`; ``None``: detected)."""

    path: Path
    sha256: str
    format: str | None = None

    @classmethod
    def of(cls, path: str | Path) -> TraceRef:
        """Hash ``path`` and detect its format; :class:`TraceFormatError` naming the file when
        it is missing, unreadable or of no known format."""
        from tailbound.traces.detect import detect_format

        p = Path(os.path.abspath(path))
        if not p.is_file():
            raise TraceFormatError(p, "no such trace file")
        fmt = detect_format(p)
        try:
            digest = file_sha256(p)
        except OSError as e:
            raise TraceFormatError(p, f"cannot read: {e.strerror}") from None
        return cls(p, digest, fmt)

    def to_json(self, base: Path | None = None) -> dict[str, Any]:
        """``{"path", "sha256", "format"}``; ``path`` relative to ``base`` (the plan file's
        folder) when the trace is inside it, else absolute."""
        path = Path(os.path.abspath(self.path))
        text = str(path)
        if base is not None:
            root = Path(os.path.abspath(base))
            if path.is_relative_to(root):
                text = path.relative_to(root).as_posix()
        return {"path": text, "sha256": self.sha256, "format": self.format}


@dataclass(frozen=True)
class PlanInputs:
    """What a plan was decided from: each tenant's trace by name, the link bandwidth of every
    host (bytes/s, each direction) and the device profile's JSON document (``None`` when the
    plan was made without one: network-only tenants); a tenant planned from a characterisation
    given directly has that (:func:`check_characterisation`'s document) in
    ``characterisations`` instead of a trace."""

    traces: Mapping[str, TraceRef]
    link_bytes_per_s: float
    profile: Mapping[str, Any] | None = None
    characterisations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def record(
        cls,
        traces: Mapping[str, str | Path],
        *,
        link_bytes_per_s: float,
        profile: str | Path | Mapping[str, Any] | Any | None = None,
    ) -> PlanInputs:
        """Hash every trace and embed the profile: ``profile`` is a profile file, its parsed
        document, or a profile value with a ``to_json`` method (:class:`SsdProfile`)."""
        refs = {name: TraceRef.of(path) for name, path in traces.items()}
        return cls(refs, float(link_bytes_per_s), _profile_document(profile))

    @classmethod
    def of_tenants(
        cls,
        tenants: TenantSet,
        names: Iterable[str],
        *,
        profile: str | Path | Mapping[str, Any] | Any | None = None,
        link_bytes_per_s: float | None = None,
    ) -> PlanInputs:
        """The inputs of the tenants called ``names`` of a tenants file: their traces, the given
        ``profile`` (else the file's ``ssd_profile``) and ``link_bytes_per_s`` (else the file's).
        """
        by_name = {t.name: t for t in tenants.tenants}
        return cls.record(
            {n: by_name[n].trace for n in names},
            link_bytes_per_s=(
                tenants.link_bytes_per_s if link_bytes_per_s is None else link_bytes_per_s
            ),
            profile=tenants.ssd_profile if profile is None else profile,
        )

    def to_json(self) -> dict[str, Any]:
        """The plan-level part (the traces go in the tenants' entries)."""
        return {
            "link_bandwidth_bytes_per_s": self.link_bytes_per_s,
            "profile": None if self.profile is None else dict(self.profile),
        }


def _profile_document(profile: Any) -> dict[str, Any] | None:
    if profile is None:
        return None
    if isinstance(profile, str | Path):
        document = read_json(profile, what="the profile")
        if not isinstance(document, dict):
            raise ConfigError(profile, "the profile must be a JSON object")
        return document
    if isinstance(profile, Mapping):
        return dict(profile)
    return dict(profile.to_json())


# ------------------------------------------------------------------------------ reading
def read_inputs(
    document: Mapping[str, Any], tenants: list[Any], path: str | None
) -> PlanInputs | None:
    """The inputs of a version 3 plan document (``None`` when it records none): ``inputs`` and
    every tenant entry's ``trace``, relative paths read relative to ``path``'s folder."""
    inputs = document.get("inputs")
    has_trace = [
        i
        for i, t in enumerate(tenants)
        if isinstance(t, dict) and ("trace" in t or "characterisation" in t)
    ]
    if inputs is None:
        if has_trace:
            raise ConfigError(
                path, "a trace without the plan's inputs", field=f"tenants[{has_trace[0]}].trace"
            )
        return None
    if not isinstance(inputs, dict):
        raise ConfigError(path, f"expected an object or null, got {inputs!r}", field="inputs")
    unknown = sorted(str(k) for k in inputs if k not in INPUTS_KEYS)
    if unknown:
        known = ", ".join(sorted(INPUTS_KEYS))
        raise ConfigError(path, f"unknown key (known: {known})", field=f"inputs.{unknown[0]}")
    link = inputs.get("link_bandwidth_bytes_per_s")
    if (
        isinstance(link, bool)
        or not isinstance(link, int | float)
        or not (math.isfinite(link) and link > 0)
    ):
        raise ConfigError(
            path,
            f"expected a positive number, got {link!r}",
            field="inputs.link_bandwidth_bytes_per_s",
        )
    profile = inputs.get("profile")
    if profile is not None and not isinstance(profile, dict):
        raise ConfigError(
            path, f"expected an object or null, got {profile!r}", field="inputs.profile"
        )
    base = Path(os.path.abspath(path)).parent if path is not None else None
    refs = {}
    characterisations = {}
    for i, doc in enumerate(tenants):
        name = str(doc.get("name"))
        if "characterisation" in doc:
            if "trace" in doc:
                raise ConfigError(
                    path,
                    "a tenant records a trace or a characterisation, not both",
                    field=f"tenants[{i}].characterisation",
                )
            where = f"tenants[{i}].characterisation"
            characterisations[name] = check_characterisation(doc["characterisation"], where, path)
            continue
        refs[name] = _trace(doc.get("trace"), f"tenants[{i}].trace", base, path)
    return PlanInputs(refs, float(link), profile, characterisations)


def _trace(doc: Any, where: str, base: Path | None, path: str | None) -> TraceRef:
    if not isinstance(doc, dict):
        raise ConfigError(
            path, f"expected an object (the plan records inputs), got {doc!r}", field=where
        )
    unknown = sorted(str(k) for k in doc if k not in TRACE_KEYS)
    if unknown:
        known = ", ".join(sorted(TRACE_KEYS))
        raise ConfigError(path, f"unknown key (known: {known})", field=f"{where}.{unknown[0]}")
    text, digest, fmt = doc.get("path"), doc.get("sha256"), doc.get("format")
    if not isinstance(text, str) or not text:
        raise ConfigError(path, f"expected a non-empty string, got {text!r}", field=f"{where}.path")
    if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
        raise ConfigError(
            path, f"expected 64 lower-case hex digits, got {digest!r}", field=f"{where}.sha256"
        )
    if fmt is not None and not isinstance(fmt, str):
        raise ConfigError(path, f"expected a string or null, got {fmt!r}", field=f"{where}.format")
    trace = Path(text)
    if not trace.is_absolute() and base is not None:
        trace = base / trace
    return TraceRef(trace, digest, fmt)


# ------------------------------------------------------------------------------ consuming
@dataclass(frozen=True)
class Resolved:
    """What a consumer uses, overrides applied and every trace checked: ``traces`` by tenant
    name (each file present and unchanged), the profile's document (``profile_source`` names it
    in errors: the ``--profile`` file, or the plan's ``inputs.profile``), the link bandwidth
    (``None`` when neither the plan nor an option gives one) and, as :attr:`inputs`, the
    record a plan made from them carries."""

    traces: Mapping[str, TraceRef]
    profile: Mapping[str, Any] | None
    profile_source: str | None
    link_bytes_per_s: float | None
    tenants_file: TenantSet | None = None

    @property
    def inputs(self) -> PlanInputs | None:
        """These inputs as a plan records them (``None`` without a link bandwidth)."""
        if self.link_bytes_per_s is None:
            return None
        return PlanInputs(self.traces, self.link_bytes_per_s, self.profile)

    def device_profile(self) -> Any:
        """The profile as a :class:`~tailbound.profiles.SsdProfile` or ``DiskProfile``;
        :class:`ConfigError` naming the profile's source and field when it is malformed, or when
        there is none."""
        from tailbound.profiles.tokens import PROFILE_TYPES

        if self.profile is None:
            raise ConfigError(None, "no device profile: give --profile", field="--profile")
        kind = self.profile.get("type")  # required, as by profiles.tokens.load_profile
        if kind not in PROFILE_TYPES:
            raise ConfigError(
                self.profile_source,
                f"unknown profile type {kind!r} (known: {', '.join(PROFILE_TYPES)})",
                field="type",
            )
        return PROFILE_TYPES[kind].from_json(dict(self.profile), path=self.profile_source)


def no_inputs_message(plan: Plan) -> str:
    """Why ``plan`` cannot be consumed alone, and what to do."""
    if plan.version < 3:
        return (
            f"this plan (version {plan.version}) records no inputs: pass --tenants and "
            "--profile, or re-plan with this version of tailbound"
        )
    return (
        "this plan records no inputs (it was built in memory and saved without them): pass "
        "--tenants and --profile, or re-plan with a tailbound verb"
    )


def resolve_inputs(
    plan: Plan,
    plan_path: str | Path,
    names: Iterable[str],
    *,
    tenants: str | Path | None = None,
    profile: str | Path | None = None,
    link_bytes_per_s: float | None = None,
) -> Resolved:
    """The traces of the tenants ``names``, the profile and the link bandwidth a consumer of
    ``plan`` (read from ``plan_path``) uses: the options ``tenants`` (a tenants file, joined by
    tenant name), ``profile`` (a profile file) and ``link_bytes_per_s`` when given, else what the
    plan records. Raises :class:`ConfigError` naming the plan file and field for a trace that is
    missing or changed since planning, or when the plan records no inputs and no option gives
    the traces; the profile is not required here (:meth:`Resolved.device_profile` says when it
    is missing)."""
    wanted = list(names)
    index = {t.name: i for i, t in enumerate(plan.tenants)}
    recorded = plan.inputs
    tset = None
    if tenants is not None:
        tset = load_tenants(tenants)
        by_name = {t.name: t for t in tset.tenants}
        missing = [n for n in wanted if n not in by_name]
        if missing:
            raise ConfigError(tenants, f"no tenant for planned tenants {missing}")
        traces = {n: TraceRef.of(by_name[n].trace) for n in wanted}
    elif recorded is None:
        raise ConfigError(plan_path, no_inputs_message(plan), field="inputs")
    else:
        traces = {}
        for n in wanted:
            if n in recorded.characterisations:
                raise ConfigError(
                    plan_path,
                    f"tenant {n!r} was planned from a characterisation given directly, not a "
                    "trace: there are no requests of it to replay (pass --tenants with a trace "
                    "for it)",
                    field=f"tenants[{index[n]}].characterisation",
                )
            ref = recorded.traces[n]
            where = f"tenants[{index[n]}].trace"
            if not ref.path.is_file():
                raise ConfigError(
                    plan_path,
                    f"tenant {n!r}: no trace file {ref.path}: restore it, or pass --tenants",
                    field=f"{where}.path",
                )
            try:
                digest = file_sha256(ref.path)
            except OSError as e:
                raise ConfigError(
                    plan_path,
                    f"tenant {n!r}: cannot read {ref.path}: {e.strerror}",
                    field=f"{where}.path",
                ) from None
            if digest != ref.sha256:
                raise ConfigError(
                    plan_path,
                    f"tenant {n!r}: {ref.path} changed since planning (sha256 {digest[:12]}…, "
                    f"planned {ref.sha256[:12]}…): re-plan, or pass --tenants to use it anyway",
                    field=f"{where}.sha256",
                )
            traces[n] = ref
    if profile is not None:
        document: Mapping[str, Any] | None = _profile_document(profile)
        source: str | None = str(profile)
    elif recorded is not None and recorded.profile is not None:
        document, source = recorded.profile, f"{plan_path} inputs.profile"
    else:
        document, source = None, None
    if link_bytes_per_s is None and recorded is not None:
        link_bytes_per_s = recorded.link_bytes_per_s
    return Resolved(traces, document, source, link_bytes_per_s, tset)


def resolve_profile(
    plan: Plan, plan_path: str | Path, profile: str | Path | None = None
) -> Resolved:
    """The device profile alone, for a consumer that needs no trace (``tailbound gate``,
    ``tailbound export``): the file ``profile`` when given, else the one ``plan`` records;
    :class:`ConfigError` naming the plan file when it records none."""
    if profile is None and (plan.inputs is None or plan.inputs.profile is None):
        if plan.inputs is None and plan.version < 3:
            why = f"this plan (version {plan.version}) records no inputs"
        else:
            why = "this plan records no device profile"
        raise ConfigError(
            plan_path,
            f"{why}: pass --profile, or re-plan with this version of tailbound",
            field="inputs.profile",
        )
    if plan.inputs is None:
        return Resolved({}, _profile_document(profile), str(profile), None)
    return resolve_inputs(plan, plan_path, [], profile=profile)


def with_inputs(
    plan: Plan,
    tenants: TenantSet,
    *,
    profile: str | Path | Mapping[str, Any] | Any | None = None,
    link_bytes_per_s: float | None = None,
) -> Plan:
    """``plan`` recording the inputs of its tenants (:meth:`PlanInputs.of_tenants`): what every
    verb that writes a plan from a tenants file calls before saving it, so that the policies
    building plans need not know."""
    import dataclasses

    inputs = PlanInputs.of_tenants(
        tenants, [t.name for t in plan.tenants], profile=profile, link_bytes_per_s=link_bytes_per_s
    )
    return dataclasses.replace(plan, inputs=inputs)
