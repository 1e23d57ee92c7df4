"""Modules imported on first use: numpy for the modules ``tailbound bound`` loads.

``import numpy`` costs ~0.1 s of a cold start (0.15–0.2 s on a loaded machine), as much as the
whole rest of ``tailbound bound`` on 16 tenants, which fits its traces and bounds its flows in
the Rust core and needs no array in Python (issue 14). The modules on that path import numpy
as::

    if TYPE_CHECKING:
        import numpy as np
    else:
        from tailbound.lazy import numpy as np

and numpy is imported the first time one of them reads an attribute of ``np`` (any other code
imports it as usual). Module-level statements of those modules must not touch ``np``;
``tests/cli/test_cold_imports.py`` checks that ``tailbound bound`` runs without numpy.
"""

from __future__ import annotations

import importlib
import types
from typing import Any


class LazyModule(types.ModuleType):
    """A stand-in for module ``name`` that imports it on the first attribute read.

    The import goes through :func:`importlib.import_module` (with its lock: threads reading
    at once get the one module); the stand-in then copies the module's attributes into itself,
    so later reads are plain attribute reads, and asks the module for any attribute added later
    (numpy's own lazily loaded submodules)."""

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__name__)
        self.__dict__.update(
            {k: v for k, v in vars(module).items() if k not in ("__name__", "__doc__")}
        )
        return getattr(module, attr)


numpy = LazyModule("numpy")
