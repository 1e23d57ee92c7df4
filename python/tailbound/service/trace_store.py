"""Uploaded traces, streamed to disk, validated and kept by content hash.

An upload is the trace file's bytes as the request body. They are written to a temporary file
in the store while their SHA-256 is computed, never held in memory whole; past the size limit
the upload stops and the temporary file is removed (413). The file is then read with the trace
readers (:func:`tailbound.traces.readers.read_trace`, the format detected from the content as
every verb does), so a corrupt or truncated trace is refused with the readers' own error naming
the line and field (422), and nothing is stored. A valid trace is renamed to
``<store>/<sha256>`` (an upload of a file already stored is the same file: idempotent).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from tailbound.errors import TraceFormatError
from tailbound.service.problems import Problem, bad_input

#: Default largest upload, bytes (1 GiB).
DEFAULT_MAX_BYTES = 1 << 30


@dataclass(frozen=True)
class StoredTrace:
    """A trace in the store: its hash, size (bytes), detected format and request count."""

    sha256: str
    size: int
    format: str
    requests: int


class TraceStore:
    """The folder of stored traces (``<data>/traces``)."""

    def __init__(self, root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        root.mkdir(parents=True, exist_ok=True)

    def path(self, sha256: str) -> Path:
        """Where the trace of ``sha256`` is kept."""
        return self.root / sha256

    async def receive(self, chunks: AsyncIterator[bytes]) -> tuple[Path, str, int]:
        """Write ``chunks`` to a temporary file in the store, hashing them; the file, its
        SHA-256 and size. :class:`Problem` 413 past :attr:`max_bytes` (nothing kept)."""
        fd, name = tempfile.mkstemp(dir=self.root, prefix=".upload-", suffix=".tmp")
        digest, size = hashlib.sha256(), 0
        try:
            with os.fdopen(fd, "wb") as out:
                async for chunk in chunks:
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise Problem(
                            413, f"the trace is larger than {self.max_bytes} bytes", "body"
                        )
                    digest.update(chunk)
                    out.write(chunk)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        return Path(name), digest.hexdigest(), size

    def keep(self, temporary: Path, sha256: str, size: int) -> StoredTrace:
        """Validate the received file with the trace readers and keep it under its hash;
        :class:`Problem` 422 naming the line and field when it is not a trace (nothing kept)."""
        from tailbound.traces.detect import detect_format
        from tailbound.traces.readers import read_trace

        try:
            if size == 0:
                raise Problem(422, "the trace is empty", "body")
            try:
                fmt = detect_format(temporary)
                trace = read_trace(temporary, fmt)
            except TraceFormatError as e:
                raise bad_input(e, "body") from None
            if len(trace) == 0:
                raise Problem(422, "the trace holds no requests", "body")
            target = self.path(sha256)
            os.replace(temporary, target)
            os.chmod(target, 0o444)
        finally:
            temporary.unlink(missing_ok=True)
        return StoredTrace(sha256, size, fmt, len(trace))
