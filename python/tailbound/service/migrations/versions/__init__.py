"""One module per schema revision, oldest first (``0001_initial``, ``0002_addresses``,
``0003_plan_entries``)."""
