"""The WorkloadCompactor experiments' ``--server-model`` option: the sound model by default (as
``tailbound place``), the reference model on request, and the chosen model reaching every
placement and every "meets its SLO alone" check the figures make."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.errors import ConfigError
from tailbound.experiments import wc_common
from tailbound.model import load_cluster, load_tenants
from tailbound.policies.events import Event
from tailbound.policies.rejection import best_alone
from tailbound.policies.server import REFERENCE, SLO_SCALE, ServerModel
from tailbound.policies.workload import TenantCurves, characterize_all
from tailbound.policies.workloadcompactor import LEVEL_MPL
from tailbound.profiles import SsdProfile
from tailbound.traces.readers import read_trace

#: The experiments that place tenants, with the arguments of a short run.
SHORT_RUNS = {
    "wc_fig54": [],
    "wc_fig55": [],
    "wc_departures": [],
    "wc_fff": ["--sizes", "4", "--first-fit-max", "4"],
    "wc_ssds": ["--workloads", "4"],
}


@pytest.fixture(scope="module")
def subset(wc62_dir: Path) -> list[TenantCurves]:
    """The 8 wc62 tenants with the smallest traces, characterised as the experiments do."""
    configs = load_tenants(wc62_dir / "tenants.json").tenants
    chosen = sorted(configs, key=lambda c: c.trace.stat().st_size)[:8]
    return characterize_all(
        chosen,
        lambda c: read_trace(c.trace),
        profile=SsdProfile.load(wc62_dir / "profile_ssd.json"),
        link_bandwidth_bytes_per_s=load_cluster(wc62_dir / "cluster.json").link_bytes_per_s,
    )


def test_model_for_builds_the_sound_default_and_the_reference(wc62_dir: Path) -> None:
    assert wc_common.SERVER_MODELS[0] == "sound"
    sound = wc_common.model_for("sound", wc62_dir)
    assert sound is not REFERENCE
    assert sound.device is not None and sound.device.level_mpl == LEVEL_MPL
    assert sound.device.low_priority_work_s is None  # no cap, as tailbound place's default
    assert wc_common.model_for("reference", wc62_dir) is REFERENCE
    with pytest.raises(ConfigError, match="--server-model"):
        wc_common.model_for("exact", wc62_dir)


def test_fits_alone_checks_with_the_model_it_is_given(
    subset: list[TenantCurves], wc62_dir: Path
) -> None:
    """An SLO halfway between a tenant's best bound alone under the reference model and under
    the sound one (whose packet delays only add) is met by the first and missed by the second:
    ``fits_alone`` must use the model it is given, or the figures' pools would not follow
    ``--server-model``."""
    sound = wc_common.model_for("sound", wc62_dir)
    for w in subset:
        ref_bound, sound_bound = best_alone(w, REFERENCE)[0], best_alone(w, sound)[0]
        assert sound_bound > ref_bound
        tight = w.with_slo((ref_bound + sound_bound) / 2 / SLO_SCALE)
        assert wc_common.fits_alone(tight, REFERENCE), w.name
        assert not wc_common.fits_alone(tight, sound), w.name
        loose = w.with_slo(sound_bound / SLO_SCALE * 1.01)
        assert wc_common.fits_alone(loose, sound), w.name


@pytest.mark.parametrize("name", sorted(SHORT_RUNS))
@pytest.mark.parametrize("choice", [None, "sound", "reference"])
def test_server_model_option_reaches_every_placement(
    name: str,
    choice: str | None,
    subset: list[TenantCurves],
    wc62_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = importlib.import_module(f"tailbound.experiments.{name}")
    cluster = load_cluster(wc62_dir / "cluster.json")
    monkeypatch.setattr(module, "setup", lambda args: (list(subset), cluster))
    if name == "wc_departures":  # the subset's own short sequence, not events.csv's 62 tenants
        events = [Event(i, "add") for i in range(len(subset))] + [Event(0, "del")]
        monkeypatch.setattr(module, "load_events", lambda path, n: events)
    seen: list[ServerModel] = []
    real_place = module.place

    def spy(workloads: Any, cluster: Any, policy: Any, **kwargs: Any) -> Any:
        seen.append(policy.model)
        return real_place(workloads, cluster, policy, **kwargs)

    monkeypatch.setattr(module, "place", spy)
    argv = ["--out", str(tmp_path), "--data", str(wc62_dir), "--quiet", *SHORT_RUNS[name]]
    if choice is not None:
        argv += ["--server-model", choice]
    assert module.main(argv) == 0
    assert seen, f"{name} placed nothing"
    if choice == "reference":
        assert all(m is REFERENCE for m in seen)
    else:  # the default is the sound model, with the default dispatch rule
        assert all(m is not REFERENCE and m.device is not None for m in seen)
        assert all(m.device.level_mpl == LEVEL_MPL for m in seen if m.device is not None)
    assert (choice or "sound") in (tmp_path / f"{name}.md").read_text()


def test_curve_cache_keeps_the_largest_requests(wc62_dir: Path, tmp_path: Path) -> None:
    """The sound model's blocking term needs each workload's largest read and write: a cache
    that dropped them read back ``inf`` (17 servers for wc62 instead of 12), and a cache in the
    old format is recomputed rather than trusted."""
    cache = tmp_path / "curves.json"
    fresh, _ = wc_common.load_wc62(wc62_dir, cache)
    cached, _ = wc_common.load_wc62(wc62_dir, cache)
    assert [w.largest for w in cached] == [w.largest for w in fresh]
    assert all(math.isfinite(x) for w in cached for x in w.largest)
    old = json.loads(cache.read_text())
    del old["format"], old["largest"]
    cache.write_text(json.dumps(old))
    again, _ = wc_common.load_wc62(wc62_dir, cache)
    assert [w.largest for w in again] == [w.largest for w in fresh]
    assert json.loads(cache.read_text())["format"] == wc_common.CACHE_FORMAT


def test_resampled_workloads_keep_their_largest_requests(subset: list[TenantCurves]) -> None:
    by_name = {w.name: w for w in subset}
    drawn = wc_common.resample(subset, 6, np.random.default_rng(0), scale=(0.8, 1.2))
    assert all(w.largest == by_name[w.name.split("#")[0]].largest for w in drawn)
    assert all(math.isfinite(x) for w in drawn for x in w.largest)


def test_fig55_replays_the_fig54_runs_planned_on_first_halves(
    subset: list[TenantCurves], wc62_dir: Path
) -> None:
    """Figs. 5.5–5.6 replay exactly Fig. 5.4's runs (same seed: same workloads and SLOs),
    planned from the first halves with the safety margin and replayed on the second halves
    (as many requests as each second half holds); under the sound model every bound holds."""
    from tailbound.experiments import wc_fig54, wc_fig55

    cluster = load_cluster(wc62_dir / "cluster.json")
    sound = wc_common.model_for("sound", wc62_dir)
    rows, summary = wc_fig55.run(subset, cluster, wc62_dir, model=sound, seed=3)
    runs = {
        label: {(w.name, 1e3 * w.slo_s) for w in chosen}
        for label, chosen, _ in wc_fig54.scenarios(subset, 3, model=sound)
        if chosen
    }
    assert [s["scenario"] for s in summary] == list(runs)
    for label, expected in runs.items():
        assert {(r["tenant"], r["slo_ms"]) for r in rows if r["scenario"] == label} == expected
    halves, second = wc_fig55.first_half_curves(wc62_dir, [w.name for w in subset], cluster, 1.1)
    plain, _ = wc_fig55.first_half_curves(wc62_dir, [w.name for w in subset], cluster, 1.0)
    whole = {w.name: w for w in subset}
    for name, w in halves.items():  # the first half's curves, times the margin
        for stage, curve in w.curves.items():
            np.testing.assert_allclose(curve.buckets, 1.1 * plain[name].curves[stage].buckets)
            np.testing.assert_allclose(curve.rates, 1.1 * plain[name].curves[stage].rates)
        assert any(
            plain[name].curves[s].mean_rate != whole[name].curves[s].mean_rate for s in w.curves
        ), name
    for r in rows:
        assert r["requests"] == len(second[r["tenant"]]) > 0
        assert r["replayed/bound"] == pytest.approx(r["at_bound_ms"] / r["bound_ms"])
        assert r["at_bound_ms"] >= r["p999_ms"]  # the bound's percentile is the largest
        assert r["bound_held"] and r["met"], r
    assert all(s["bounds held"] == s["SLOs met"] == s["workloads"] for s in summary)


def test_fff_no_screens_solves_every_lp_and_places_the_same(subset: list[TenantCurves]) -> None:
    """``--no-screens`` turns the per-server and cluster screens and the certificates off in both
    placements: nothing is screened or certified, at least as many configurations are tried, and
    the servers used are the same (the screens are exact)."""
    from tailbound.experiments import wc_fff

    on, off = (
        wc_fff.run(subset, [12], 12, 0, model=REFERENCE, screens=s)[0] for s in (True, False)
    )
    assert (on["screens"], off["screens"]) == ("on", "off")
    for p in ("fff", "first-fit"):
        assert off[f"{p} screened"] == off[f"{p} certified"] == 0
        assert off[f"{p} servers"] == on[f"{p} servers"]
        assert off[f"{p} tries"] >= on[f"{p} tries"]
    assert on["first-fit screened"] + on["first-fit certified"] > 0
    assert off["first-fit tries"] > on["first-fit tries"]
    policy = wc_fff.policy(REFERENCE, False)
    assert not policy.screen and not policy.certify
    assert wc_fff.policy(REFERENCE, True).certify


def test_fig54_only_places_the_chosen_runs_unchanged(subset: list[TenantCurves]) -> None:
    """``--only random`` (Fig. 5.9's ten sets) gives the random-SLO row of the full run of that
    seed, ``--only same`` its five same-SLO rows: skipping runs does not change the draws."""
    from tailbound.experiments import wc_fig54

    full = wc_fig54.run(subset, 2, 10)
    random_only = wc_fig54.run(subset, 2, 10, only="random")
    same_only = wc_fig54.run(subset, 2, 10, only="same")
    assert random_only == [r for r in full if r["scenario"] == "random SLO"]
    assert same_only == [r for r in full if r["scenario"] != "random SLO"]
    assert len(same_only) == len(wc_common.FIG54_SLOS)
    assert all(r["seed"] == 2 for r in full)
