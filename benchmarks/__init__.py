"""Performance benchmarks of a checkout: engine and persistence overhead per LLM call
(``overhead``), database bytes per call (``storage``), worker throughput (``throughput``), reading
a big tree over HTTP (``tree_read``), and the environments' own speed (``textcraft_speed``,
``bash_speed``). Each is a command: ``python -m benchmarks.NAME`` from the repository's root.

Not part of the installed package (the wheel ships ``adapt``, ``api``, ``workers`` and
``migrations`` only): the benchmarks may import any layer, nothing imports them. The evaluation
harness users run (``adapt bench ...``) is :mod:`adapt.eval`.
"""
