"""The one policy registry: every name builds its policy, the verbs read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailbound.cli.main import main
from tailbound.model import TenantSet
from tailbound.policies.admission import SncPolicy
from tailbound.policies.dnc_baselines import DncPolicy
from tailbound.policies.floors import AloneFloor, JointFloor
from tailbound.policies.placement import FixedPolicy, WorkloadCompactorPolicy
from tailbound.policies.pm_placement import PriorityMeisterPolicy
from tailbound.policies.prioritymeister import by_slo, prioritize
from tailbound.policies.registry import KINDS, REGISTRY, build, entry, names
from tailbound.policies.scheduling import Cake, earliest_deadline_first, proportional_share


def test_every_kind_has_policies_and_names_are_unique_per_kind() -> None:
    for kind in KINDS:
        assert names(kind)
        assert len(set(names(kind))) == len(names(kind))
    assert {e.kind for e in REGISTRY} == set(KINDS)


def test_every_placement_prioritization_and_scheduling_entry_builds() -> None:
    assert isinstance(build("workloadcompactor", "placement"), WorkloadCompactorPolicy)
    assert isinstance(build("knee", "placement"), FixedPolicy)
    assert build("average-rate:1.5", "placement").name == "average-rate:1.5"
    assert isinstance(build("prioritymeister-placement", "placement"), PriorityMeisterPolicy)
    assert build("prioritymeister", "prioritization") is prioritize
    assert build("byslo", "prioritization") is by_slo
    assert build("ps", "scheduling") is proportional_share
    assert build("edf", "scheduling") is earliest_deadline_first
    assert build("cake", "scheduling", period_s=2.0) == Cake(period_s=2.0)


def test_admission_entries_build_with_their_floors(tmp_path: Path) -> None:
    tset = TenantSet(())
    assert isinstance(build("snc-meister", "admission", tset), SncPolicy)
    assert isinstance(build("dnc", "admission", tset), DncPolicy)
    floored = build("snc-meister", "admission", tset, alone_floor=True, joint_floor=True)
    assert isinstance(floored, JointFloor) and isinstance(floored.policy, AloneFloor)
    assert floored.analysis == "snc-meister" and not floored.worst_case
    # a DNC baseline's worst case is never below its traces' latencies: no floor
    assert isinstance(build("dnc", "admission", tset, alone_floor=True), DncPolicy)


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


def test_policies_verb_lists_the_registry(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    for e in REGISTRY:
        assert f"| {e.kind} | {e.name} |" in out
    assert main(["policies", "--kind", "admission"]) == 0
    out = capsys.readouterr().out
    assert "snc-meister" in out and "workloadcompactor" not in out
