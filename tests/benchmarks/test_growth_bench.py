"""The growth benchmark, tiny: it copies real rows (every table keyed by a task), /metrics
counts the copies, and it prints each figure at both sizes with the 2x goal."""

from __future__ import annotations

from benchmarks import growth


def test_the_growth_benchmark_runs_small() -> None:
    result = growth.run(tasks=6, seeds=2, repeat=1)
    small, large = result["small"], result["large"]
    assert (small["tasks"], large["tasks"], result["total"]) == (2, 6, 6)
    assert result["folded"] == 4  # the copies, folded as the scrapes after an upgrade would
    assert large["llm_calls"] == 3 * small["llm_calls"] == 3 * result["seed_calls"] > 0
    text = growth.report(result)
    assert "GET /metrics (running totals)" in text and "at 6 / at 2 tasks" in text
    assert text.count("goal <= 2 x") == len(growth.FIGURES) + 4  # and the database's own
