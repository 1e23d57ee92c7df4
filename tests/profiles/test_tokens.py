from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tailbound.errors import ConfigError
from tailbound.profiles import LinkModel, MessageSizes, SsdModel, SsdProfile, stage_model
from tailbound.stages import Stage
from tailbound.traces import Trace


def test_link_tokens_by_hand() -> None:
    t = Trace.from_arrays(time=[0.0, 1.0], op=[0, 1], size=[4096, 4096])
    up = LinkModel(Stage.NET_IN, 1e6).tokens(t)
    down = LinkModel(Stage.NET_OUT, 1e6).tokens(t)
    # read: request 200 + 0.025*4096 = 302.4 B, response 200 + 1.1*4096 = 4705.6 B; write reversed
    assert up.tolist() == pytest.approx([302.4e-6, 4705.6e-6])
    assert down.tolist() == pytest.approx([4705.6e-6, 302.4e-6])


def test_link_overhead_is_configurable() -> None:
    t = Trace.from_arrays(time=[0.0], op=[0], size=[0])
    m = LinkModel(Stage.NET_IN, 100.0, MessageSizes(overhead_bytes=50.0))
    assert m.tokens(t).tolist() == [0.5]


def test_ssd_profile_of_shared_data_interpolates(data_dir: Path) -> None:
    p = SsdProfile.load(data_dir / "wc62" / "profile_ssd.json")
    assert p.read_mpl == 48 and p.write_mpl == 96
    # 768 B lies halfway between the 512 B and 1024 B rows
    expected = (4895285.1887739813 + 5270270.0803274447) / 2
    assert p.bandwidth(np.array([0], np.uint8), np.array([768]))[0] == pytest.approx(expected)
    # at and above the last row the last row holds
    last = p.read_bandwidth[-1]
    big = p.bandwidth(np.array([0, 0], np.uint8), np.array([int(p.sizes[-1]), 10**9]))
    assert big.tolist() == [last, last]
    # tokens are size / bandwidth in seconds
    t = Trace.from_arrays(time=[0.0], op=[1], size=[512])
    assert SsdModel(p).tokens(t)[0] == pytest.approx(512 / 604349.12310967746)


def test_ssd_profile_round_trips_json(data_dir: Path) -> None:
    p = SsdProfile.load(data_dir / "wc62" / "profile_ssd.json")
    q = SsdProfile.from_json(json.loads(json.dumps(p.to_json())))
    assert np.array_equal(p.sizes, q.sizes) and np.array_equal(p.write_bandwidth, q.write_bandwidth)


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({}, "bandwidthTable"),
        (
            {"bandwidthTable": [{"requestSize": 512, "readBandwidth": "x", "writeBandwidth": 1}]},
            "bandwidthTable\\[0\\].readBandwidth",
        ),
        (
            {
                "bandwidthTable": [{"requestSize": 512, "readBandwidth": 1, "writeBandwidth": 1}],
                "readMPL": 0,
            },
            "readMPL",
        ),
    ],
)
def test_ssd_profile_errors_name_the_field(document: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=f"p.json, field {field}"):
        SsdProfile.from_json(document, path="p.json")


def test_ssd_profile_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="p.json: not JSON"):
        SsdProfile.load(bad)


def test_stage_model_storage_needs_profile() -> None:
    with pytest.raises(ConfigError, match="needs a device profile"):
        stage_model(Stage.STORAGE)
