"""The characterisations of the admission families, given instead of a trace (issue 27; the
r-b form of the placement policies and the DNC baselines is
:func:`tailbound.plan_inputs.check_characterisation`'s, which reads these forms through
:func:`check_form`).

- **Nested QoS** (``nested-qos``): ``{"nested_classes": [[sigma_s, rho, delta_s], …],
  "largest_work_s": w}``: the tenant's nested classes innermost first (``σ`` seconds of work,
  ``ρ`` a utilisation, ``δ`` seconds; each positive and finite, nested outward: non-decreasing,
  as the gateway's ``check_classes`` requires), one per SLO grade, and its largest request's
  work in seconds on the cluster's SSD (Lemma 3's blocking term).
  :func:`tailbound.policies.nested_qos.select_classes` computes the classes from a trace
  (the tests compute it so).
- **SNC** (``snc-meister``, ``snc-hop-by-hop``, ``snc-convolution``): ``{"mmbp": {"in": M,
  "out": M[, "storage": M]}}``, per flow of the tenant (its requests to its server, its
  responses back, and its device's work with a device) the Markov-modulated Bernoulli process
  :func:`tailbound.snc.mmpp.fit_mmpp` fits to its trace: ``M = {"transition": [[…]],
  "p_request": […], "mu": […], "lambdas": […]}`` with ``S`` states (1 to :data:`MAX_STATES`):
  ``transition`` an ``S × S`` row-stochastic matrix (per 1 ms step), ``p_request`` the per-step
  arrival probabilities in [0, 1], ``mu`` the exponential work's rates (1 / mean work: bytes on
  the wire for ``in``/``out``, device-seconds for ``storage``) > 0, ``lambdas`` the states'
  request rates per second ≥ 0 (:func:`mmbp_of`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tailbound.errors import ConfigError

#: The top-level keys of each form (beside the r-b form's).
NESTED_KEYS = frozenset({"nested_classes", "largest_work_s"})
MMBP_KEYS = frozenset({"mmbp"})
#: States an MMBP of a characterisation may have (the fit uses at most 10).
MAX_STATES = 64
#: Flows an SNC characterisation describes.
MMBP_FLOWS = ("in", "out", "storage")
_MMBP_FIELDS = ("transition", "p_request", "mu", "lambdas")

Fail = Callable[[str, str], ConfigError]


def kind(doc: dict[str, Any]) -> str:
    """The form of a characterisation document: ``nested``, ``mmbp`` or ``rb``."""
    if "nested_classes" in doc:
        return "nested"
    if "mmbp" in doc:
        return "mmbp"
    return "rb"


def number(fail: Fail, value: Any, field: str, low: float, high: float = math.inf) -> float:
    """``value`` as a float if it is a finite number in ``[low, high]``; otherwise ``fail``'s
    error naming ``field``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        span = f"in [{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
        raise fail(field, f"expected a finite number {span}, got {value!r}")
    return float(value)


def check_form(doc: dict[str, Any], fail: Fail) -> dict[str, Any]:
    """A Nested QoS or SNC characterisation (module docstring; ``doc`` holds ``nested_classes``
    or ``mmbp``), checked and normalised; ``fail(field, message)`` makes the error."""
    keys = NESTED_KEYS if kind(doc) == "nested" else MMBP_KEYS
    unknown = sorted(str(k) for k in doc if k not in keys)
    if unknown:
        raise fail(unknown[0], f"unknown key here (known: {', '.join(sorted(keys))})")
    if kind(doc) == "nested":
        return _check_nested(doc, fail)
    return _check_mmbp(doc, fail)


def _check_nested(doc: dict[str, Any], fail: Fail) -> dict[str, Any]:
    classes = doc.get("nested_classes")
    if not isinstance(classes, list) or not 0 < len(classes) <= 64:
        raise fail("nested_classes", "expected a list of 1 to 64 [sigma_s, rho, delta_s]")
    out: list[list[float]] = []
    for i, c in enumerate(classes):
        here = f"nested_classes[{i}]"
        if not isinstance(c, list) or len(c) != 3:
            raise fail(here, f"expected [sigma_s, rho, delta_s], got {c!r}")
        values = [number(fail, v, here, 0.0) for v in c]
        if min(values) <= 0:
            raise fail(here, f"sigma_s, rho and delta_s must be positive, got {c!r}")
        if out and any(v < w for v, w in zip(values, out[-1], strict=True)):
            raise fail(here, "classes must be nested: sigma_s, rho, delta_s non-decreasing")
        out.append(values)
    if "largest_work_s" not in doc:
        raise fail("largest_work_s", "missing: the largest request's work (s)")
    largest = number(fail, doc["largest_work_s"], "largest_work_s", 0.0)
    return {"nested_classes": out, "largest_work_s": largest}


def _check_mmbp(doc: dict[str, Any], fail: Fail) -> dict[str, Any]:
    flows = doc.get("mmbp")
    if not isinstance(flows, dict):
        raise fail("mmbp", "expected an object of in, out (and storage) models")
    for name in flows:
        if name not in MMBP_FLOWS:
            raise fail(f"mmbp.{name}", f"unknown flow (known: {', '.join(MMBP_FLOWS)})")
    out: dict[str, Any] = {}
    for name in MMBP_FLOWS:
        at = f"mmbp.{name}"
        m = flows.get(name)
        if m is None and name == "storage":
            continue
        if not isinstance(m, dict):
            raise fail(at, f"missing or not an object: {m!r}")
        extra = sorted(str(k) for k in m if k not in _MMBP_FIELDS)
        if extra:
            raise fail(f"{at}.{extra[0]}", f"unknown key (known: {', '.join(_MMBP_FIELDS)})")
        rows = m.get("transition")
        if not isinstance(rows, list) or not 0 < len(rows) <= MAX_STATES:
            raise fail(f"{at}.transition", f"expected 1 to {MAX_STATES} rows")
        states = len(rows)
        matrix = []
        for i, row in enumerate(rows):
            here = f"{at}.transition[{i}]"
            if not isinstance(row, list) or len(row) != states:
                raise fail(here, f"expected a row of {states} probabilities")
            values = [number(fail, v, here, 0.0, 1.0) for v in row]
            if abs(sum(values) - 1.0) > 1e-9:
                raise fail(here, f"a row must sum to 1, got {sum(values)!r}")
            matrix.append(values)
        vectors = {}
        for key, low, high in (
            ("p_request", 0.0, 1.0),
            ("mu", 0.0, math.inf),
            ("lambdas", 0.0, math.inf),
        ):
            v = m.get(key)
            if not isinstance(v, list) or len(v) != states:
                raise fail(f"{at}.{key}", f"expected a list of {states} numbers (one per state)")
            vectors[key] = [number(fail, x, f"{at}.{key}[{j}]", low, high) for j, x in enumerate(v)]
        if min(vectors["mu"]) <= 0:
            raise fail(f"{at}.mu", "every state's work rate must be positive")
        out[name] = {"transition": matrix, **vectors}
    return {"mmbp": out}


def mmbp_of(models: dict[str, Any]) -> dict[str, Any]:
    """The SNC characterisation of fitted models ``{flow: MmppModel}`` (``in``, ``out`` and
    ``storage`` with a device)."""
    return {
        "mmbp": {
            flow: {
                "transition": [[float(x) for x in row] for row in m.transition],
                "p_request": [float(x) for x in m.p_request],
                "mu": [float(x) for x in m.mu],
                "lambdas": [float(x) for x in m.lambdas],
            }
            for flow, m in models.items()
        }
    }
