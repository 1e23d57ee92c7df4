"""``aequitas_fig16`` on a short run: one CSV with the required columns, one row per ρ, and
ρ × admitted share constant within a coefficient of variation of 0.2."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tailbound.errors import ConfigError
from tailbound.experiments import aequitas_fig16


def test_aequitas_fig16_short_run_admits_in_proportion_to_one_over_rho(tmp_path: Path) -> None:
    code = aequitas_fig16.main(
        ["--out", str(tmp_path), "--rhos", "1.5,3,6", "--duration", "0.2", "--quiet"]
    )
    assert code == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["aequitas_fig16.csv"]
    assert (tmp_path / "aequitas_fig16.png").stat().st_size > 0
    with open(tmp_path / "aequitas_fig16.csv", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames is not None
    assert reader.fieldnames[:2] == ["rho", "admitted_share"]
    rho = np.array([float(r["rho"]) for r in rows])
    share = np.array([float(r["admitted_share"]) for r in rows])
    assert rho.tolist() == [1.5, 3.0, 6.0]
    assert np.all((share > 0.0) & (share <= 1.0))
    assert np.all(np.diff(share) < 0)  # burstier traffic, less admitted
    product = rho * share
    assert product.std() / product.mean() <= 0.2
    # and near the model's φ/(φ + 1)/ρ = 0.8/ρ
    assert np.all(np.abs(product - 0.8) < 0.3)


def test_aequitas_fig16_check_fails_when_not_inverse() -> None:
    flat = [{"rho": r, "admitted_share": 0.3} for r in (1.5, 3.0, 6.0)]
    failures = aequitas_fig16.check(flat)
    assert len(failures) == 1 and "CV" in failures[0]
    inverse = [{"rho": r, "admitted_share": 0.8 / r} for r in (1.5, 3.0, 6.0)]
    assert aequitas_fig16.check(inverse) == []


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--rhos", "0.5,2"], "--rhos"),
        (["--rhos", "2"], "--rhos"),
        (["--rhos", "a,b"], "--rhos"),
        (["--duration", "0"], "--duration"),
    ],
)
def test_aequitas_fig16_bad_options_are_refused_by_name(
    tmp_path: Path, argv: list[str], field: str
) -> None:
    with pytest.raises(ConfigError) as e:
        aequitas_fig16.main(["--out", str(tmp_path), *argv])
    assert e.value.field == field
