"""Reading JSON documents with clear errors, and writing them all or nothing.

Every input document (tenants, cluster, plan, profile) is read with :func:`read_json`, so a file
that cannot be read, is not UTF-8 or is not JSON gives a :class:`~tailbound.errors.ConfigError`
naming the file (and the line of a syntax error). Every JSON output goes through
:func:`write_json_atomic` (:mod:`tailbound.atomic`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tailbound.atomic import write_text_atomic
from tailbound.errors import ConfigError


def read_json(path: str | Path, *, what: str = "the file") -> Any:
    """The parsed JSON document at ``path``; :class:`ConfigError` naming the file otherwise.

    ``what`` names the document in the message when the file cannot be read ("cannot read
    the plan"); text that is not UTF-8 or not JSON is "not JSON: …" with the line at fault.
    """
    try:
        return json.loads(Path(path).read_text())
    except OSError as e:
        raise ConfigError(path, f"cannot read {what}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(path, "not JSON: the file is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ConfigError(path, f"not JSON: {e.msg} at line {e.lineno}") from None


def write_json_atomic(path: str | Path, document: Any, *, indent: int = 1) -> None:
    """Write ``document`` to ``path`` as indented JSON, all or nothing, creating its folder
    (:func:`tailbound.atomic.write_text_atomic`); NaN and infinity are refused (not JSON)."""
    path = Path(path)
    text = json.dumps(document, indent=indent, allow_nan=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    except OSError as e:
        raise ConfigError(path, f"cannot write: {e.strerror}") from None
