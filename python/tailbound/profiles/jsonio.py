"""Reading and atomically writing the JSON documents of device profiles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tailbound.atomic import write_text_atomic
from tailbound.errors import ConfigError


def read_json(path: str | Path, *, what: str = "the profile") -> Any:
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


def write_json_atomic(path: str | Path, document: Any) -> None:
    """Write ``document`` to ``path`` as indented JSON, all or nothing
    (:func:`tailbound.atomic.write_text_atomic`): a reader never sees a half-written profile."""
    try:
        write_text_atomic(path, json.dumps(document, indent=2) + "\n")
    except OSError as e:
        raise ConfigError(path, f"cannot write the profile: {e.strerror}") from None
