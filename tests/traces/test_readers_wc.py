from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tailbound.traces.readers import read_trace


def test_read_trace_wc_format(tmp_path: Path) -> None:
    path = tmp_path / "w.txt"
    path.write_text("1000,0x00000600,DiskRead\n2500000000,0xFFff,DiskWrite\n2500000001,0x1,Put\n")
    t = read_trace(path)
    assert t.time.tolist() == pytest.approx([1e-6, 2.5, 2.500000001])
    assert t.size.tolist() == [0x600, 0xFFFF, 1]
    assert t.op.tolist() == [0, 1, 1] and t.name == "w"


def test_read_trace_decodes_hex_like_int(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    sizes = rng.integers(0, 1 << 40, 500)
    path = tmp_path / "h.txt"
    path.write_text("".join(f"{i},{hex(s)},Get\n" for i, s in enumerate(sizes)))
    assert read_trace(path).size.tolist() == sizes.tolist()
