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


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path in ``path``'s folder to write to; on a normal exit it replaces ``path``
    (mode 0644, as an ordinary file), on an exception it is removed and ``path`` is untouched.

    The temporary name ends with ``path``'s suffix, so writers that infer the format from the
    extension (matplotlib's ``savefig``) write the right one.
    """
    target = Path(path)
    fd, name = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent
    )
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` all or nothing, flushed to disk before the rename."""
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
