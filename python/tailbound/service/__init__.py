"""The control plane (``tailbound serve``; docs/service.md): an HTTP API over the library's own
admission, placement and Plan functions, its state in a database (SQLAlchemy 2, Alembic), API
tokens with scopes, versioned immutable Plans whose per-host parts agents fetch, and
measurements compared with the promise.

Modules: :mod:`~tailbound.service.db` (tables, engine), :mod:`~tailbound.service.migrate`
(Alembic, shipped in ``migrations/``), :mod:`~tailbound.service.engines` (one decision by the
library's policies), :mod:`~tailbound.service.admission` (serialisable commits),
:mod:`~tailbound.service.plans` (parts, ETags, diffs), :mod:`~tailbound.service.trace_store`
(uploads), :mod:`~tailbound.service.tokens` (authentication), :mod:`~tailbound.service.reports`
(predicted against measured), :mod:`~tailbound.service.metrics` (Prometheus),
:mod:`~tailbound.service.app` (routes), :mod:`~tailbound.service.server` (running it),
:mod:`~tailbound.service.client` (the HTTP client the CLI uses), and the web pages for operators
(:mod:`~tailbound.service.pages`, signed in by :mod:`~tailbound.service.web_session`).
"""
