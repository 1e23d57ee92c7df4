"""Tenants given by a characterisation instead of a trace, for each family's engine (issue 27;
docs/service.md, "Tenants without a trace"; the forms are those of
:mod:`tailbound.characterisation_forms` and :func:`tailbound.plan_inputs.check_characterisation`).

Which form a cluster accepts (:func:`refusal`): a placement policy and the DNC baselines the r-b
form (the DNC baselines with ``largest_work_s``), Nested QoS its nested classes (one per SLO
grade, each class's ``δ`` the grade's latency), the SNC policies the MMBP form, under the thesis'
rule only (the bound alone: tailbound's default rule adds the tenant's latency measured alone
and polices its trace's load, both of which replay its trace). Each is used exactly where the
family would have computed it from the trace (:func:`prime`): the DNC baselines'
``CurveCache`` gets the curves and the largest request's work, the SNC policies' ``FitCache``
the fitted models, Nested QoS decides on the classes
(:func:`tailbound.policies.nested_qos.decide_classes`). So a tenant given by the
characterisation of its own trace is decided exactly as on the trace (tested,
``tests/service/test_characterisation_families.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tailbound import characterisation_forms as forms
from tailbound.model import Tenant

#: The registry family of the DNC baselines (its name is also the ``dnc`` policy's).
DNC_FAMILY = "dnc"
#: The form each kind or admission family accepts.
FORMS = {"placement": "rb", "dnc": "rb", "nested": "nested", "snc": "mmbp"}
_FORM_TEXT = {
    "rb": "the r-b form (stages, largest_read_bytes, largest_write_bytes)",
    "nested": "nested_classes and largest_work_s",
    "mmbp": "mmbp (the fitted models of its flows)",
}


def refusal(
    kind: str, family: str, policy: str, options: Mapping[str, Any], doc: Mapping[str, Any]
) -> tuple[str, str] | None:
    """Why a cluster of ``policy`` (``kind`` placement or admission, its registry ``family``,
    its ``options``) cannot take the checked characterisation ``doc``: (message, field under
    the characterisation), or None when it can."""
    want = FORMS.get("placement" if kind == "placement" else family)
    if want is None:
        return f"{policy} analyses each tenant's trace: give one", ""
    form = forms.kind(dict(doc))
    if form != want:
        return f"{policy} takes a characterisation of the form: {_FORM_TEXT[want]}", ""
    if family == DNC_FAMILY and "largest_work_s" not in doc:
        return (
            f"{policy} needs largest_work_s, the largest request's work on the device (s)",
            "largest_work_s",
        )
    if family == "snc":
        rule = {"alone_floor": True, "joint_floor": False, "police": True}
        rule |= {k: v for k, v in options.get("rule", {}).items() if k in rule}
        if any(rule.values()):
            return (
                f"{policy} with this cluster's rule measures the tenant alone or polices its "
                "trace's load, which needs the trace: a characterisation needs the thesis' rule "
                "(options.rule: alone_floor, joint_floor and police false)",
                "",
            )
    return None


def nested_refusal(tenant: Tenant, doc: Mapping[str, Any]) -> tuple[str, str] | None:
    """Why Nested QoS classes ``doc`` do not fit ``tenant``'s SLO: one class per grade, each
    ``δ`` the grade's latency (None when they do)."""
    grades = tenant.slo.grades or ((tenant.slo.latency_s, tenant.slo.percentile),)
    classes = doc["nested_classes"]
    if len(classes) != len(grades):
        return f"{len(classes)} classes for {len(grades)} SLO grades", "nested_classes"
    for i, ((delta, _), c) in enumerate(zip(grades, classes, strict=True)):
        if abs(c[2] - delta) > 1e-9 * delta:
            return (
                f"class {i}'s delta_s {c[2]:g} is not its SLO grade's latency {delta:g}",
                f"nested_classes[{i}]",
            )
    return None


def prime(caches: Mapping[str, Any], tenant: Tenant, doc: Mapping[str, Any]) -> None:
    """Put ``tenant``'s characterisation where the admission policy would compute it from its
    trace: the DNC baselines' curve cache or the SNC policies' fit cache (``caches``, by
    ``curves`` and ``fits``), keyed by the tenant's ``trace`` (its characterisation's file)."""
    key = str(tenant.trace)
    form = forms.kind(dict(doc))
    if form == "rb" and "curves" in caches:
        import numpy as np

        from tailbound.characterize.rbcurve import RbCurve
        from tailbound.stages import Stage

        cache = caches["curves"]
        for direction, stage in (("in", "net_in"), ("out", "net_out"), ("storage", "storage")):
            s = doc["stages"][stage]
            points = np.asarray(s["points"], dtype=np.float64)
            cache.curves[(key, direction)] = RbCurve(
                points[:, 0], points[:, 1], float(s["mean_rate"]), Stage(stage), tenant.name
            )
        cache.max_requests[key] = float(doc["largest_work_s"])
    elif form == "mmbp" and "fits" in caches:
        from tailbound.snc.mmpp import MmppModel

        fits = caches["fits"]
        for flow, m in doc["mmbp"].items():
            fits.models[(key, flow)] = MmppModel(
                m["transition"], m["p_request"], m["mu"], m["lambdas"]
            )
