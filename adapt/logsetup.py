"""The one logging set-up of adapt's commands: the ``adapt`` CLI (:mod:`adapt.cli.support`) and
the benchmarks run with ``python -m``. Library modules only log (``getLogger(__name__)``); this
is the only place handlers are set."""

from __future__ import annotations

import logging
import sys

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(verbose: bool, *, quiet: int = logging.WARNING) -> None:
    """Log to stderr: everything with ``verbose``, else from ``quiet`` up (a server passes
    ``logging.INFO`` to show its start-up and requests)."""
    logging.basicConfig(level=logging.DEBUG if verbose else quiet, format=LOG_FORMAT,
                        stream=sys.stderr)
