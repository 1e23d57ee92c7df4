"""The shared output helpers of the SNC reproductions."""

from __future__ import annotations

from pathlib import Path

from tailbound.experiments._snc_common import plot_latency_ms, write_outputs


def test_snc_common_write_outputs_and_plot(tmp_path: Path) -> None:
    png = write_outputs(tmp_path, "fig", "Fig. X", ["n", "ms"], [[1, "2.0"], [2, "3.0"]])
    assert (tmp_path / "fig.md").read_text().startswith("# Fig. X\n\n")
    assert png == tmp_path / "fig.png"
    lines = [([1.0, 2.0], [0.002, 0.003], {"marker": "o", "label": "a"})]
    plot_latency_ms(png, lines, "n", "ms", log_y=True)
    assert png.read_bytes().startswith(b"\x89PNG")
