"""Type stubs of the compiled module ``tailbound._core`` (checked by ``mypy.stubtest``)."""

import numpy as np
from numpy.typing import NDArray

__version__: str

class ParseError(ValueError):
    """A malformed record: ``args`` are ``(line, field, message)``."""

# --- snc (stochastic network calculus) ---------------------------------------------------------
def perron_roots(
    generator: NDArray[np.float64], excess: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Perron roots of ``diag(1 + e) G + diag(e)`` for each row ``e`` of ``excess``."""
