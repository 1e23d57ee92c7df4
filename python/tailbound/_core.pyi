"""Type stubs of the compiled module ``tailbound._core`` (checked by ``mypy.stubtest``)."""

__version__: str

class ParseError(ValueError):
    """A malformed record: ``args`` are ``(line, field, message)``."""
