"""The deletion benchmark's pieces, tiny: it purges one tenant, nothing of it is left, and
VACUUM gives the space back."""

from __future__ import annotations

from benchmarks import deletion


def test_the_deletion_benchmark_runs_small() -> None:
    result = deletion.run(tasks=2, database="sqlite")
    assert result["deleted"] == 2 and result["left"] == 0 and result["blocks"] > 0
    assert result["vacuum_full"] < result["before"]
    assert "rows or blocks of the purged tenant left  0" in deletion.report(result)
