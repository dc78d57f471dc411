"""The tree-read benchmark: ``python -m benchmarks.tree_read`` (the command, ``__main__``) and its
measurement (``measure``)."""
