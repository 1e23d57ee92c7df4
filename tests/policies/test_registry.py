"""The one policy registry: every name builds its policy, the verbs and experiments read it."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tailbound.cli.main import build_parser, main
from tailbound.model import TenantSet
from tailbound.plan import Plan
from tailbound.policies.admission import SncPolicy
from tailbound.policies.aequitas import AequitasPolicy
from tailbound.policies.dnc_baselines import DncPolicy, QJumpPolicy, SiloPolicy
from tailbound.policies.floors import AloneFloor, JointFloor
from tailbound.policies.nested_qos import NestedQosPolicy
from tailbound.policies.placement import FixedPolicy, WorkloadCompactorPolicy
from tailbound.policies.pm_placement import PriorityMeisterPolicy
from tailbound.policies.policing import Policed
from tailbound.policies.prioritymeister import by_slo, prioritize
from tailbound.policies.pslo import PsloPolicy
from tailbound.policies.registry import (
    KINDS,
    REGISTRY,
    build,
    entry,
    find,
    names,
    parameter,
    registered,
)
from tailbound.policies.scheduling import (
    Cake,
    EarliestDeadlineFirst,
    ProportionalShare,
    RuntimeController,
)
from tailbound.policies.server import REFERENCE


def test_every_kind_has_policies_and_names_are_unique() -> None:
    for kind in KINDS:
        assert names(kind)
    every = [e.name for e in REGISTRY]
    assert len(set(every)) == len(every)  # unique across kinds too: `find` needs it
    assert {e.kind for e in REGISTRY} == set(KINDS)
    families = ("snc", "dnc", "nested", "control", "rpc")  # the last three: admit only
    assert {n for f in families for n in names("admission", f)} == set(names("admission"))
    assert names("admission", "nested") == ("nested-qos",)
    assert names("admission", "control") == ("pslo",)


#: What each entry builds, with the arguments its kind's factories take.
EXPECTED = {
    "workloadcompactor": WorkloadCompactorPolicy,
    "effective-bandwidth": FixedPolicy,
    "average-rate:K": FixedPolicy,
    "knee": FixedPolicy,
    "prioritymeister-placement": PriorityMeisterPolicy,
    "snc-meister": SncPolicy,
    "snc-hop-by-hop": SncPolicy,
    "snc-convolution": SncPolicy,
    "dnc": DncPolicy,
    "silo": SiloPolicy,
    "qjump": QJumpPolicy,
    "nested-qos": NestedQosPolicy,
    "pslo": PsloPolicy,
    "aequitas": AequitasPolicy,
    "ps": ProportionalShare,
    "edf": EarliestDeadlineFirst,
    "cake": Cake,
    "cake-net": Cake,
}


def _built(name: str, kind: str) -> object:
    spelled = name.replace(":K", ":1.5")
    if kind == "placement":
        return build(spelled, kind, REFERENCE)
    if kind == "admission":
        return build(spelled, kind, TenantSet(()))
    return build(spelled, kind)


@pytest.mark.parametrize("e", REGISTRY, ids=lambda e: e.name)
def test_every_entry_builds_exactly_its_policy(e) -> None:  # type: ignore[no-untyped-def]
    policy = _built(e.name, e.kind)
    if e.kind == "prioritization":
        assert policy is {"prioritymeister": prioritize, "byslo": by_slo}[e.name]
        return
    assert type(policy) is EXPECTED[e.name]
    if e.kind == "placement" and isinstance(policy, FixedPolicy):
        assert policy.name == e.name.replace(":K", ":1.5")
    if e.kind == "admission":
        assert policy.analysis == e.name  # the name its bounds carry into the Plan
    if e.kind == "scheduling":
        controller: RuntimeController = policy  # type: ignore[assignment]
        assert callable(controller.run)
        assert controller.plan(Plan("placed", 1, [])).policy == e.name


def test_registry_covers_what_it_builds() -> None:
    assert set(EXPECTED) | {"prioritymeister", "byslo"} == {e.name for e in REGISTRY}


def test_factories_take_their_options() -> None:
    assert build("cake", "scheduling", period_s=2.0) == Cake(period_s=2.0)
    assert build("prioritymeister-placement", "placement", k=5).k == 5
    model = build("workloadcompactor", "placement", REFERENCE).model
    assert model is REFERENCE


def test_admission_entries_build_with_their_rule() -> None:
    tset = TenantSet(())
    floored = build("snc-meister", "admission", tset, alone_floor=True, joint_floor=True)
    assert isinstance(floored, JointFloor) and isinstance(floored.policy, AloneFloor)
    assert floored.analysis == "snc-meister" and not floored.worst_case
    hop = build("snc-hop-by-hop", "admission", tset, police=True, incremental=False)
    assert isinstance(hop, Policed) and hop.analysis == "snc-hop-by-hop"
    # a DNC baseline's worst case is never below its traces' latencies: the rule is ignored
    assert isinstance(build("dnc", "admission", tset, alone_floor=True, fits=None), DncPolicy)
    # ... but a keyword no admission policy takes is an error, not silently dropped
    with pytest.raises(TypeError, match="silo baseline got unexpected keywords alone_flor"):
        build("silo", "admission", tset, alone_flor=True)
    with pytest.raises(TypeError, match="alone_flor"):
        build("snc-meister", "admission", tset, alone_flor=True)


def test_parameterised_names_are_parsed_once_here() -> None:
    e = entry("average-rate:2", "placement")
    assert e.name == "average-rate:K" and e.parameterised
    assert parameter("average-rate:2.50", e) == 2.5
    assert build("average-rate:2", "placement").name == "average-rate:2"
    for bad in ("average-rate:", "average-rate:x", "average-rate:0", "average-rate:inf"):
        with pytest.raises(ValueError, match="average-rate:K needs a number K > 0"):
            build(bad, "placement")


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("fastest", "placement", "unknown placement policy 'fastest'"),
        ("knee", "admission", "unknown admission policy 'knee'"),
        ("ps", "nonsense", "unknown policy kind"),
    ],
)
def test_unknown_names_are_clear_errors(name: str, kind: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        entry(name, kind)


def test_find_and_registered() -> None:
    assert find("byslo").kind == "prioritization" and find("average-rate:3").kind == "placement"
    with pytest.raises(ValueError, match="unknown policy 'pm'"):
        find("pm")
    assert registered(["dnc", "silo"], "admission") == ("dnc", "silo")
    with pytest.raises(ValueError, match=r"unknown admission policy 'slio' \(known: snc-meister"):
        registered(["dnc", "slio"], "admission")
    with pytest.raises(ValueError, match="average-rate:K needs a number K > 0"):
        registered(["average-rate:two"], "placement")


# --------------------------------------------------------------- consumers read the registry
def _option(verb: str, option: str) -> argparse.Action:
    verbs = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    return next(a for a in verbs[verb]._actions if option in a.option_strings)


def test_the_cli_offers_exactly_the_registered_names() -> None:
    assert tuple(_option("admit", "--policy").choices) == names("admission")
    # bound: the analyses with bounds per tenant (Nested QoS' Lemma 3 is a device's capacity)
    analyses = names("admission", "snc") + names("admission", "dnc")
    assert tuple(_option("bound", "--analysis").choices) == analyses
    assert tuple(_option("prioritize", "--policy").choices) == names("prioritization")
    # place takes a parameterised name: its help lists the registry, the registry validates it
    assert _option("place", "--policy").help == (
        f"placement policy: {', '.join(names('placement'))} (default workloadcompactor)"
    )


def test_every_name_the_experiments_use_resolves() -> None:
    """Each experiment's policy list is made of registry names (the modules validate them when
    imported; this re-checks the lists they expose, so a list that stops validating fails)."""
    from tailbound import demo
    from tailbound.experiments import (
        bound_sweep,
        pm_common,
        snc_fig47,
        snc_fig410,
        snc_fig411,
        snc_fig412,
        snc_fig415,
        snc_fig417,
        snc_fig419,
        snc_storage,
        wc_common,
    )

    placement = (*wc_common.POLICIES, *demo.DEMO_POLICIES, bound_sweep.WC)
    admission = (
        *snc_fig47.ANALYSES,
        *snc_fig410.DNC_POLICIES,
        *snc_fig411.POLICIES,
        *snc_fig412.POLICIES,
        *snc_fig415.POLICIES,
        *[p for p in snc_fig417.POLICIES if p != "none"],  # "none": no admission control
        *snc_fig419.POLICIES,
        *snc_storage.DNC_POLICIES,
    )
    assert registered(placement, "placement") == placement
    assert registered(admission, "admission") == admission
    assert registered([bound_sweep.PM], "prioritization")
    assert set(pm_common.ENTRIES) == {*pm_common.POLICIES, "cake-net"}  # + pm_fig37_cake's
    assert {e.kind for e in pm_common.ENTRIES.values()} == {"scheduling", "prioritization"}


def test_the_snc_variants_run_the_registered_snc_meister() -> None:
    from tailbound.experiments import snc_fig410

    assert "snc-meister" in names("admission", "snc")
    assert set(snc_fig410.SNC_VARIANTS).isdisjoint(snc_fig410.DNC_POLICIES)


def test_looking_names_up_imports_no_policy() -> None:
    """Building the CLI's parser stays cheap: the registry imports its factories on build only."""
    probe = (
        "import sys\n"
        "from tailbound.policies import registry\n"
        "for k in registry.KINDS: registry.names(k)\n"
        "registry.entry('average-rate:2', 'placement'); registry.registered(['dnc'], 'admission')\n"
        "print(' '.join(m for m in sys.modules if m.startswith('tailbound.policies')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert set(done.stdout.split()) == {"tailbound.policies", "tailbound.policies.registry"}


def test_policies_verb_lists_the_registry(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    for e in REGISTRY:
        assert f"| {e.kind} | {e.name} |" in out
    assert main(["policies", "--kind", "admission"]) == 0
    out = capsys.readouterr().out
    assert "snc-meister" in out and "workloadcompactor" not in out
