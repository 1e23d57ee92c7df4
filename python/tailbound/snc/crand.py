"""The C library's ``srand``/``rand`` (glibc's additive feedback generator), replayed in numpy.

The reference SNC-Meister implementation searches the Hölder parameters with ``rand()`` after
``srand(1)``. To reproduce its bounds in the dependent case we replay the same sequence. glibc's
``rand()`` (the default ``TYPE_3`` state of 31 words) is::

    r[0] = seed;  r[i] = 16807 r[i-1] mod (2^31 - 1)        for i = 1..30
    r[i] = r[i-31]                                           for i = 31..33
    r[i] = (r[i-31] + r[i-3]) mod 2^32                       for i >= 34
    rand()_k = r[k + 344] >> 1                               for k = 0, 1, ...

>>> CRand(1).integers(3).tolist()
[1804289383, 846930886, 1681692777]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from tailbound.lazy import numpy as np


RAND_MAX = 2147483647


class CRand:
    """A stream of glibc ``rand()`` values after ``srand(seed)``."""

    def __init__(self, seed: int = 1) -> None:
        seed = seed or 1
        r = [0] * 34
        r[0] = seed
        for i in range(1, 31):
            r[i] = (16807 * r[i - 1]) % 2147483647
        for i in range(31, 34):
            r[i] = r[i - 31]
        self._state = r  # the last 34 words; only r[-31] and r[-3] are needed
        for _ in range(310):  # discard the first 310 outputs (indices 34..343)
            self._next_raw(1)

    def _next_raw(self, n: int) -> NDArray[np.uint64]:
        r = self._state
        out = np.empty(n, dtype=np.uint64)
        for k in range(n):
            value = (r[-31] + r[-3]) & 0xFFFFFFFF
            r.append(value)
            out[k] = value
        del r[: len(r) - 34]
        return out

    def integers(self, n: int) -> NDArray[np.int64]:
        """The next ``n`` values of ``rand()``."""
        return (self._next_raw(n) >> np.uint64(1)).astype(np.int64)

    def uniform(self, shape: tuple[int, int]) -> NDArray[np.float64]:
        """``rand() / RAND_MAX`` for the next ``rows × cols`` calls, filled row by row."""
        count = shape[0] * shape[1]
        return (self.integers(count) / RAND_MAX).reshape(shape)
