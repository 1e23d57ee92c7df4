"""The control plane's Alembic migrations (``env.py``, ``versions/``), run by
:func:`tailbound.service.migrate.upgrade` when ``tailbound serve`` starts."""
