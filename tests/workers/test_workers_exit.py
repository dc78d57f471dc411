"""`adapt worker` exits non-zero after an unrecoverable error (Celery records it on the worker
but ``app.start`` does not return it), so a supervisor restarts it."""

from __future__ import annotations

from types import SimpleNamespace

from workers.celery_app import exit_code


def test_exit_code_is_the_workers_own() -> None:
    assert exit_code(SimpleNamespace(exitcode=1)) == 1  # "Unrecoverable error: ..."
    assert exit_code(SimpleNamespace(exitcode=0)) == 0  # a requested stop
    assert exit_code(SimpleNamespace(exitcode=None)) == 0
    assert exit_code(None) == 1  # the worker never started
