"""Writing files all or nothing: a temporary file beside the target, renamed over it.

Every file tailbound writes (plans, profiles, bounds, tables, plots, Parquet traces) goes through
:func:`atomic_path`, so an interrupted run never leaves a half-written file where a reader (or the
next run) expects a whole one: the rename is atomic on POSIX file systems.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> write_text_atomic(folder / "a.txt", "hello\\n")
>>> (folder / "a.txt").read_text()
'hello\\n'
>>> try:
...     with atomic_path(folder / "b.txt") as tmp:
...         _ = tmp.write_text("half")
...         raise RuntimeError("interrupted")
... except RuntimeError:
...     pass
>>> sorted(p.name for p in folder.iterdir())  # no b.txt, no temporary left behind
['a.txt']
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tailbound.errors import ConfigError


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path in ``path``'s folder to write to; on a normal exit it replaces ``path``
    (mode 0644, as an ordinary file), on an exception it is removed and ``path`` is untouched.

    The temporary name ends with ``path``'s suffix, so writers that infer the format from the
    extension (matplotlib's ``savefig``) write the right one. Missing folders of ``path`` are
    created; ``path`` naming a folder, or a folder that cannot be written, is a
    :class:`~tailbound.errors.ConfigError` naming ``path``. Temporaries of ours that an earlier
    write of ``path`` left behind (a killed run) are removed first (:func:`leftover_temporaries`;
    two processes writing the same output at once are not supported: the last rename wins anyway).
    """
    target = Path(path)
    if target.is_dir():
        raise ConfigError(target, "is a folder; give the name of a file to write")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for old in leftover_temporaries(target):
            old.unlink(missing_ok=True)
        fd, name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent
        )
    except OSError as e:
        raise ConfigError(target, f"cannot write: {e.strerror or e}") from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def leftover_temporaries(path: str | Path) -> list[Path]:
    """The temporaries :func:`atomic_path` makes for ``path`` (``.<name>.<random>.tmp<suffix>``
    beside it) that exist now: after a kill between creating and renaming one.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / ".plan.json.x1y2.tmp.json").write_text("{")
    >>> [p.name for p in leftover_temporaries(folder / "plan.json")]
    ['.plan.json.x1y2.tmp.json']
    >>> write_text_atomic(folder / "plan.json", "{}")  # the next write removes it
    >>> sorted(p.name for p in folder.iterdir())
    ['plan.json']
    """
    target = Path(path)
    prefix, suffix = f".{target.name}.", f".tmp{target.suffix}"
    # Names compared as strings from one scandir, a Path made for a match only: the fit cache
    # writes many files into one folder that may hold thousands (issue 14, cold start).
    try:
        with os.scandir(target.parent) as entries:
            names = [
                e.name
                for e in entries
                if e.name.startswith(prefix)
                and e.name.endswith(suffix)
                and len(e.name) > len(prefix) + len(suffix)
                and e.is_file()
            ]
    except OSError:
        return []
    return [target.parent / name for name in names]


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` all or nothing, flushed to disk before the rename."""
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
