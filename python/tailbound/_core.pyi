"""Type stubs of the compiled module ``tailbound._core`` (checked by ``mypy.stubtest``)."""

__version__: str

class ParseError(ValueError):
    """A malformed record: ``args`` are ``(line, field, message)``."""

# ---- traces: parsers of tailbound_core::parse (see tailbound.traces.readers) ----------------
import os  # noqa: E402  (imports of this area, kept with its stubs to ease merging)

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

#: ``(time, op, size, offset | None, source | None, origin_s, skipped)``
_Columns = tuple[
    NDArray[np.float64],
    NDArray[np.uint8],
    NDArray[np.int64],
    NDArray[np.int64] | None,
    NDArray[np.int32] | None,
    float,
    int,
]

def parse_wc(path: str | os.PathLike[str]) -> _Columns: ...
def parse_msr(path: str | os.PathLike[str]) -> _Columns: ...
def parse_ascii(
    path: str | os.PathLike[str],
    time_units_per_s: float,
    sector_bytes: int,
    read_value: int,
    write_value: int,
) -> _Columns: ...
def parse_spc(path: str | os.PathLike[str]) -> _Columns: ...
def parse_vscsi(path: str | os.PathLike[str], skip_other: bool) -> _Columns: ...
def parse_azure_llm(
    path: str | os.PathLike[str],
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], float]: ...
