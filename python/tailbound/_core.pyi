"""Type stubs of the compiled module ``tailbound._core`` (checked by ``mypy.stubtest``)."""

__version__: str

class ParseError(ValueError):
    """A malformed record: ``args`` are ``(line, field, message)``."""

# --- r-b curves (crates/tailbound-py/src/rb.rs) ---------------------------------------------------
import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

def rbgen(
    time: NDArray[np.float64],
    tokens: NDArray[np.float64],
    rates: NDArray[np.float64],
    threads: int = 1,
) -> NDArray[np.float64]:
    """``b(r)`` (s of work) per rate, thesis Algorithm 2.1."""

def rbgen_argmax(
    time: NDArray[np.float64],
    tokens: NDArray[np.float64],
    rates: NDArray[np.float64],
    threads: int = 1,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """``(b, first, last)`` per rate: requests ``first..=last`` fill the bucket to ``b``."""

def exact_rb_curve(
    time: NDArray[np.float64],
    tokens: NDArray[np.float64],
    min_rate: float,
    threads: int = 1,
    method: str = "auto",
) -> tuple[
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    int,
    int,
    str,
]:
    """``(rates, buckets, work, duration, passes, evaluations, method)`` of the exact curve."""

def prune_rb_curve(
    rates: NDArray[np.float64], buckets: NDArray[np.float64], k: int
) -> NDArray[np.int64]:
    """Indices of the vertices kept when pruning to at most ``k`` segments."""
