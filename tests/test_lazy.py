"""``tailbound.lazy``: a module imported on the first attribute read (numpy off the cold path
of ``tailbound bound``)."""

from __future__ import annotations

import subprocess
import sys


def test_module_is_imported_on_first_attribute_read_only() -> None:
    # A fresh interpreter: ``colorsys`` (a small standard module) is not imported by the
    # stand-in itself, only by the first read of one of its attributes.
    probe = """
import sys
from tailbound.lazy import LazyModule
m = LazyModule("colorsys")
before = "colorsys" in sys.modules
value = m.rgb_to_hsv(1.0, 0.0, 0.0)
import colorsys
print(before, "colorsys" in sys.modules, value == colorsys.rgb_to_hsv(1.0, 0.0, 0.0),
      "rgb_to_hsv" in vars(m), m.hls_to_rgb is colorsys.hls_to_rgb)
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["False", "True", "True", "True", "True"]


def test_missing_attribute_is_an_attribute_error() -> None:
    import pytest

    from tailbound.lazy import LazyModule

    with pytest.raises(AttributeError):
        LazyModule("colorsys").no_such_function  # noqa: B018
