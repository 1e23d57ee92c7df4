"""The control plane's fixtures (defined in :mod:`tests.service.harness`)."""

from tests.service.harness import postgres, server, small_demo, sqlite_url

__all__ = ["postgres", "server", "small_demo", "sqlite_url"]
