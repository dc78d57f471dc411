"""The throughput benchmark: ``python -m benchmarks.throughput`` (the command, ``__main__``) and
its measurement (``measure``)."""
