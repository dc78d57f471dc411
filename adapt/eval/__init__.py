"""The evaluation harness behind ``adapt bench``: strategies, models and designs run over an
environment's task set on one grid (``grid``), per-task records and reports (``report``,
``plots``), one module per environment (``textcraft``, ``alfworld``, ``sql``, ``bash``) and the
decoding monitor's savings (``monitor_savings``). Performance benchmarks are not here: they
live in the repository's ``benchmarks/`` and are not installed."""
