"""Type stubs of the compiled module ``tailbound._core`` (checked by ``mypy.stubtest``)."""

__version__: str

class ParseError(ValueError):
    """A malformed record: ``args`` are ``(line, field, message)``."""

# --- sim: the trace-driven simulator (crates/tailbound-py/src/sim.rs) ---
from typing import final  # noqa: E402

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

@final
class Simulation:
    """A configured simulation of links, devices and workloads."""

    def __new__(
        cls,
        config_json: str,
        arrival: list[NDArray[np.float64]],
        op: list[NDArray[np.uint8]],
        size: list[NDArray[np.float64]],
        cost: list[list[NDArray[np.float64]]],
    ) -> Simulation: ...
    def run(self, until: float) -> int: ...
    @property
    def now(self) -> float: ...
    @property
    def events(self) -> int: ...
    def set_param(
        self, kind: str, index: int, workload: int, name: str, values: list[float]
    ) -> None: ...
    def records(self) -> tuple[NDArray[np.float64], NDArray[np.float64], int]: ...
    def workload_ranges(self) -> list[tuple[int, int]]: ...

def shape(
    arrival: NDArray[np.float64], cost: NDArray[np.float64], buckets: list[tuple[float, float]]
) -> NDArray[np.float64]: ...
