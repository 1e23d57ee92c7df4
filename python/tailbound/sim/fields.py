"""Typed access to a parsed scenario document, raising :class:`ConfigError` that names the file
and the dotted field at fault (``workloads[2].slo.latency_s``). Numbers must be finite
(``nan``, ``inf`` and ``Infinity`` are refused; an absent field may default to infinity)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tailbound.errors import ConfigError


class Fields:
    """A table of the document at ``where`` (a dotted path), read with type checks."""

    def __init__(self, data: Any, path: str | None, where: str) -> None:
        if not isinstance(data, Mapping):
            raise ConfigError(path, f"expected a table, got {data!r}", field=where or None)
        self.data = data
        self.path = path
        self.where = where

    def at(self, key: str) -> str:
        """The dotted name of ``key`` in this table."""
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, message: str) -> ConfigError:
        """An error about ``key``."""
        return ConfigError(self.path, message, field=self.at(key))

    def check_keys(self, allowed: set[str]) -> None:
        """Reject keys the format does not know (a typo must not be silently ignored)."""
        for key in self.data:
            if key not in allowed:
                raise self.error(str(key), f"unknown field (expected one of {sorted(allowed)})")

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def table(self, key: str) -> Fields:
        if key not in self.data:
            raise self.error(key, "missing table")
        return Fields(self.data[key], self.path, self.at(key))

    def tables(self, key: str) -> list[Fields]:
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise self.error(key, f"expected a list of tables, got {value!r}")
        return [Fields(v, self.path, f"{self.at(key)}[{i}]") for i, v in enumerate(value)]

    def string(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str) or not value:
            raise self.error(key, f"expected a non-empty string, got {value!r}")
        return value

    def number(
        self,
        key: str,
        default: float | None = None,
        *,
        low: float = 0.0,
        high: float = float("inf"),
        low_open: bool = False,
    ) -> float:
        if key not in self.data and default is not None:
            return float(default)  # a default may be infinite ("no limit"); a value may not
        value: Any = self.data.get(key)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok and not (math.isfinite(value) and low <= value <= high):
            ok = False
        if ok and low_open and value == low:
            ok = False
        if not ok:
            bracket = "(" if low_open else "["
            closing = ")" if high == float("inf") else "]"
            raise self.error(
                key, f"expected a finite number in {bracket}{low}, {high}{closing}, got {value!r}"
            )
        return float(value)

    def integer(self, key: str, default: int | None = None, *, low: int = 0) -> int:
        value = self.data.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise self.error(key, f"expected an integer >= {low}, got {value!r}")
        return value

    def choice(self, key: str, options: tuple[str, ...], default: str | None = None) -> str:
        value = self.data.get(key, default)
        if value not in options:
            raise self.error(key, f"expected one of {list(options)}, got {value!r}")
        return str(value)
