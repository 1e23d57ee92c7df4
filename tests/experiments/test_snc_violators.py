"""The violator diagnostic of Fig. 4.10: FIFO sojourn times and the per-tenant table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tailbound.experiments import snc_violators
from tailbound.experiments.snc_violators import fifo_sojourn


@given(st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 3.0)), min_size=1, max_size=40))
def test_fifo_sojourn_matches_lindley(pairs: list[tuple[float, float]]) -> None:
    gaps, service = np.array(pairs).T
    arrival = np.cumsum(gaps)
    expect, departure = [], 0.0
    for t, s in zip(arrival, service, strict=True):
        departure = max(departure, t) + s
        expect.append(departure - t)
    np.testing.assert_allclose(fifo_sojourn(arrival, service), expect, atol=1e-9)


def test_table_rows_per_direction(data_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["--data", str(data_dir), "--tenants", "3", "--names", "w001,w002"]
    assert snc_violators.main(args) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| w")]
    assert [ln.split(" | ")[:2] for ln in lines] == [
        ["| w001", "in"],
        ["| w001", "out"],
        ["| w002", "in"],
        ["| w002", "out"],
    ]
    for ln in lines:
        values = [float(v) for v in ln.strip("| ").split(" | ")[2:]]
        assert len(values) == 6 and all(v >= 0 for v in values)


def test_unknown_tenant_is_an_error(data_dir: Path) -> None:
    with pytest.raises(SystemExit):
        snc_violators.main(["--data", str(data_dir), "--tenants", "2", "--names", "w005"])
