"""Reading JSON documents with clear errors, and writing them all or nothing.

Every input document (tenants, cluster, plan, profile) is read with :func:`read_json`, so a file
that cannot be read, is not UTF-8 or is not JSON gives a :class:`~tailbound.errors.ConfigError`
naming the file (and the line of a syntax error). Every JSON output goes through
:func:`write_json_atomic` (:mod:`tailbound.atomic`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tailbound.atomic import write_text_atomic
from tailbound.errors import ConfigError


def read_json(path: str | Path, *, what: str = "the file", finite: bool = True) -> Any:
    """The parsed JSON document at ``path``; :class:`ConfigError` naming the file otherwise.

    ``what`` names the document in the message when the file cannot be read ("cannot read
    the plan"); text that is not UTF-8 or not JSON is "not JSON: …" with the line at fault, and
    so is a number that is not finite (``NaN``, ``Infinity``, ``1e400``: JSON has none, and
    tailbound reads none anywhere). ``finite=False`` leaves them to a loader that checks every
    number itself and names the field (``tailbound.model``).
    """
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ConfigError(path, f"cannot read {what}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(path, "not JSON: the file is not UTF-8 text") from None
    if not finite:
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(path, f"not JSON: {e.msg} at line {e.lineno}") from None
    return loads_json(text, path)


class _NotFinite(ValueError):
    pass


def _constant(token: str) -> float:
    raise _NotFinite(token)


def _float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _NotFinite(token)
    return value


def loads_json(text: str, path: str | Path | None = None) -> Any:
    """Parse JSON ``text`` (of file ``path``) refusing non-finite numbers; errors name the line.

    >>> loads_json('{"slo_s": 0.05}')
    {'slo_s': 0.05}
    >>> loads_json('{"a": 1, "slo_s": Infinity}', "t.json")
    Traceback (most recent call last):
    ...
    tailbound.errors.ConfigError: t.json: not JSON: Infinity at line 1 (numbers must be finite)
    """
    try:
        return json.loads(text, parse_constant=_constant, parse_float=_float)
    except _NotFinite as e:
        token = str(e)
        at = text.find(token)
        line = text.count("\n", 0, at) + 1 if at >= 0 else None
        where = f" at line {line}" if line is not None else ""
        raise ConfigError(path, f"not JSON: {token}{where} (numbers must be finite)") from None
    except json.JSONDecodeError as e:
        raise ConfigError(path, f"not JSON: {e.msg} at line {e.lineno}") from None


def write_json_atomic(path: str | Path, document: Any, *, indent: int = 1) -> None:
    """Write ``document`` to ``path`` as indented JSON, all or nothing, creating its folder
    (:func:`tailbound.atomic.write_text_atomic`); NaN and infinity are refused (not JSON)."""
    path = Path(path)
    text = json.dumps(document, indent=indent, allow_nan=False) + "\n"
    try:
        write_text_atomic(path, text)
    except OSError as e:
        raise ConfigError(path, f"cannot write: {e.strerror}") from None
