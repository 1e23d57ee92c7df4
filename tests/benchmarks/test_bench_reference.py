"""The conversion ``benchmarks/bench_reference.py`` makes for the reference SNC-Meister pipeline
(no reference build needed): tenants file → topology (clients, SLOs, percentiles, hosts,
dependencies), traces → the reference's ``Get``/``Put`` CSV, the reference's output → bounds."""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path

import pytest
from benchmarks.bench_reference import (
    FlowBounds,
    find_reference,
    largest_difference,
    main,
    reference_bounds,
    reference_trace,
    slo_percentile,
    topology,
)

from tailbound.errors import ConfigError, TraceFormatError
from tailbound.model import load_tenants


def _tenants(tmp_path: Path, rows: list[dict], link: float = 125e6) -> Path:
    for row in rows:
        trace = tmp_path / row["trace"]
        if not trace.exists():
            trace.write_text("1000,0x1000,DiskRead\n2000,0x200,DiskWrite\n")
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"link_bandwidth_bytes_per_s": link, "tenants": rows}))
    return path


def _row(name: str, trace: str, client: str, server: str, **extra: object) -> dict:
    return {
        "name": name,
        "slo_s": 0.05,
        "percentile": 0.999,
        "trace": trace,
        "client_host": client,
        "server_host": server,
        **extra,
    }


def test_topology_has_one_client_per_tenant_with_its_group_as_dependencies(
    tmp_path: Path,
) -> None:
    path = _tenants(
        tmp_path,
        [
            _row("A", "a.txt", "c0", "s0", group="g", slo_s=0.02),
            _row("B", "b.txt", "c1", "s0", percentile=0.99),
            _row("C", "a.txt", "c0", "s1", group="g"),
            _row("D", "b.txt", "c1", "s1", group="g"),
        ],
    )
    tset = load_tenants(path)
    traces = {t.trace: tmp_path / f"ref-{t.trace.name}" for t in tset.tenants}
    doc = topology(tset, traces, tmp_path / "out.json")
    assert doc["outputConfig"] == str(tmp_path / "out.json")
    clients = doc["clients"]
    assert [c["name"] for c in clients] == ["A", "B", "C", "D"]
    assert [c["SLO"] for c in clients] == [0.02, 0.05, 0.05, 0.05]
    # the reference computes 1 − SLOpercentile / 100: as close to our percentile as floats allow
    assert [c["SLOpercentile"] for c in clients] == [99.9, 99.0, 99.9, 99.9]
    assert [(c["clientHost"], c["serverHost"]) for c in clients] == [
        ("c0", "s0"),
        ("c1", "s0"),
        ("c0", "s1"),
        ("c1", "s1"),
    ]
    assert [c["clientVM"] for c in clients] == ["0", "1", "2", "3"]
    assert [c["trace"] for c in clients] == [
        str(tmp_path / n) for n in ("ref-a.txt", "ref-b.txt", "ref-a.txt", "ref-b.txt")
    ]
    assert clients[0]["dependencies"] == ["C", "D"]
    assert "dependencies" not in clients[1]
    assert clients[2]["dependencies"] == ["A", "D"]
    assert clients[3]["dependencies"] == ["A", "C"]
    assert "addrPrefix" not in doc  # no enforcers to update


@pytest.mark.parametrize(
    ("rows", "link", "field"),
    [
        ([_row("A", "a.txt", "c0", "s0")], 1e9, "link_bandwidth_bytes_per_s"),
        ([_row("A", "a.txt", "c0", "s0", device="ssd0")], 125e6, "tenants[0].device"),
        (
            [_row(f"T{i}", "a.txt", "c0", "s0", slo_s=0.01 * (i + 1)) for i in range(9)],
            125e6,
            "tenants",
        ),
    ],
    ids=["link speed", "device", "nine SLO classes"],
)
def test_what_the_reference_cannot_express_is_refused(
    tmp_path: Path, rows: list[dict], link: float, field: str
) -> None:
    tset = load_tenants(_tenants(tmp_path, rows, link))
    traces = {t.trace: t.trace for t in tset.tenants}
    with pytest.raises(ConfigError) as e:
        topology(tset, traces, tmp_path / "out.json")
    assert e.value.field == field


def test_slo_percentile_divides_back_within_an_ulp() -> None:
    for p in (0.5, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999):
        q = slo_percentile(p)
        assert q == pytest.approx(100 * p, rel=1e-15)
        assert abs(q / 100 - p) <= math.ulp(p)
    assert slo_percentile(0.99) / 100 == 0.99


def test_trace_ops_become_get_and_put(tmp_path: Path) -> None:
    src = tmp_path / "t.txt"
    src.write_text("564037000,0x00001000,DiskWrite\n564243000,0x00000200,DiskRead\n\n9,ff,Get\n")
    dest = tmp_path / "r.txt"
    reference_trace(src, dest)
    assert dest.read_text() == ("564037000,0x00001000,Put\n564243000,0x00000200,Get\n9,ff,Get\n")


def test_a_trace_line_the_reference_cannot_read_names_its_line(tmp_path: Path) -> None:
    src = tmp_path / "t.txt"
    src.write_text("1,0x10,DiskRead\n2,0x10,Trim\n")
    with pytest.raises(TraceFormatError) as e:
        reference_trace(src, tmp_path / "r.txt")
    assert e.value.line == 2


def test_reference_output_is_read_per_flow_and_compared(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text(
        json.dumps(
            {
                "clients": [
                    {
                        "name": "A",
                        "latency": 0.03,
                        "flows": [
                            {"name": "F0In", "latency": 0.01, "priority": 0},
                            {"name": "F0Out", "latency": 0.02, "priority": 0},
                        ],
                    }
                ]
            }
        )
    )
    theirs = reference_bounds(out)
    assert theirs == {"A": FlowBounds(0.01, 0.02, 0.03)}
    d = largest_difference({"A": FlowBounds(0.011, 0.02, 0.031)}, theirs)
    assert d.request == pytest.approx(0.1) and d.response == 0.0
    assert d.total == pytest.approx(1 / 30)
    with pytest.raises(ValueError, match="tenants differ"):
        largest_difference({"B": FlowBounds(1, 1, 2)}, theirs)


def test_find_reference_accepts_checkout_src_or_flat_folder(tmp_path: Path) -> None:
    for name in ("SNC-ConfigGen", "SNC-Calculator"):
        p = tmp_path / "src" / name / name
        p.parent.mkdir(parents=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    assert find_reference(tmp_path).calculator == tmp_path / "src/SNC-Calculator/SNC-Calculator"
    assert find_reference(tmp_path / "src").configgen.name == "SNC-ConfigGen"
    with pytest.raises(ConfigError, match="no reference build"):
        find_reference(tmp_path / "src" / "SNC-ConfigGen")


def test_without_a_reference_the_benchmark_is_skipped_and_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TAILBOUND_SNC_REFERENCE", raising=False)
    assert main(["--cases", "16"]) == 0
    err = capsys.readouterr().err
    assert "skipped" in err and "--reference DIR" in err


def test_a_reference_folder_without_a_build_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--quick", "--reference", str(tmp_path)]) == 2
    assert "no reference build" in capsys.readouterr().err
