"""The ``tailbound`` command: one sub-command per job, each in its own module."""
