"""Reading and atomically writing the JSON documents of device profiles."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

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
    """Write ``document`` to ``path`` as indented JSON, all or nothing.

    The text goes to a temporary file in the same directory, is flushed to disk, then renamed
    over ``path``, so a reader never sees a half-written profile.
    """
    target = Path(path)
    text = json.dumps(document, indent=2) + "\n"
    try:
        fd, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or Path(".")
        )
    except OSError as e:
        raise ConfigError(path, f"cannot write the profile: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)
    except OSError as e:
        Path(temporary).unlink(missing_ok=True)
        raise ConfigError(path, f"cannot write the profile: {e.strerror}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
