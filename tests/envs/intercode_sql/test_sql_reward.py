"""InterCode's reward, checked against values worked out by hand from the formula.

reward = round(tau * IoU, 2) when the results share rows and tau is defined, else IoU; IoU of
the row multisets; 1.0 for two empty results; 0.0 without an agent result. Rows are the strings
``'a'``, ``'b'``... here (compared as strings; ``'a' < 'b' < 'c'``).
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from adapt.envs.intercode_sql.reward import (
    _np_round2,
    intersecting_items,
    intersection_over_union,
    kendall_tau_b,
    reward,
    reward_from_strings,
    row_strings,
)


@pytest.mark.parametrize(
    ("agent", "gold", "expected"),
    [
        # exact answer: IoU 1, tau 1
        (["a", "b", "c"], ["a", "b", "c"], 1.0),
        # wrong answer: nothing in common, IoU 0
        (["x"], ["a"], 0.0),
        (["x", "y"], ["a", "b", "c"], 0.0),
        # partial, a single common row: IoU 1/2, tau undefined (one pair) -> unrounded IoU
        (["a"], ["a", "b"], 0.5),
        # partial, two common rows in gold order: IoU 2/3, tau 1 -> round(0.666.., 2)
        (["a", "b"], ["a", "b", "c"], 0.67),
        # extra rows: IoU 2/4, tau 1
        (["a", "b", "x", "y"], ["a", "b"], 0.5),
        # one of three agent rows wrong: |A∩G| = 2, |A∪G| = 4, tau 1
        (["a", "b", "x"], ["a", "b", "c"], 0.5),
        # reversed pair: the one pair is discordant, tau -1 -> -1.0 (InterCode can go negative)
        (["b", "a"], ["a", "b"], -1.0),
        # one swap of three: pairs (a,a)-(c,b) C, (a,a)-(b,c) C, (c,b)-(b,c) D -> tau 1/3
        (["a", "c", "b"], ["a", "b", "c"], 0.33),
        # gold not in string order: x=[a,c,b], y=[c,a,b]; all three pairs discordant -> -1
        # (the rank correlation of positions would be 1/3: tau pairs values, as scipy does)
        (["a", "c", "b"], ["c", "a", "b"], -1.0),
        # duplicates in the agent result: counts a:2,b:1 vs a:1,b:1 -> IoU 2/3; common lists
        # [a, b] and [a, b] -> tau 1
        (["a", "a", "b"], ["a", "b"], 0.67),
        # duplicates in the gold result: IoU 1/2, one common row -> unrounded 0.5
        (["a"], ["a", "a"], 0.5),
        # same duplicates, same order: tau-b with ties = (3-1-1+1-0)/sqrt(2*2) = 1
        (["a", "a", "b"], ["a", "a", "b"], 1.0),
        # duplicates, other order: x=[a,b,a] y=[a,a,b]; tot 3, x-ties 1, y-ties 1, joint 0,
        # discordant 1 -> (3-1-1+0-2)/2 = -0.5
        (["a", "b", "a"], ["a", "a", "b"], -0.5),
        # every common row equal: tau undefined (all ties) -> IoU 1
        (["a", "a"], ["a", "a"], 1.0),
        # both empty
        ([], [], 1.0),
        # agent empty, gold not: IoU 0
        ([], ["a"], 0.0),
        # gold empty, agent not: IoU 0
        (["a"], [], 0.0),
    ],
)
def test_reward_by_hand(agent: list[str], gold: list[str], expected: float) -> None:
    assert reward_from_strings(agent, gold) == pytest.approx(expected, abs=1e-12)


def test_no_agent_result_scores_zero() -> None:
    assert reward(None, [(1,)]) == 0.0
    assert reward(None, []) == 0.0  # even when the gold result is empty


def test_rows_compare_as_strings_of_tuples() -> None:
    assert row_strings([(1, "a"), [2, None], ("x",)]) == ["(1, 'a')", "(2, None)", "('x',)"]
    assert reward([(1, "a"), (2, "b")], [(1, "a"), (2, "b")]) == 1.0
    assert reward([[1, "a"]], [(1, "a")]) == 1.0  # a list row is compared as a tuple
    assert reward([(1,)], [("1",)]) == 0.0  # 1 and '1' print differently
    assert reward([], []) == 1.0


def test_iou_and_intersecting_items() -> None:
    assert intersection_over_union([], []) == 1.0
    assert intersection_over_union(["a", "a", "b"], ["a", "c"]) == pytest.approx(1 / 4)
    from collections import Counter

    assert intersecting_items(["b", "a", "b", "c", "b"], Counter({"b": 2, "c": 1})) == [
        "b",
        "b",
        "c",
    ]


def test_kendall_tau_edge_cases() -> None:
    assert math.isnan(kendall_tau_b([], []))
    assert math.isnan(kendall_tau_b(["a"], ["a"]))
    assert math.isnan(kendall_tau_b(["a", "a"], ["a", "b"]))  # x all tied
    assert kendall_tau_b(["a", "b"], ["a", "b"]) == 1.0
    assert kendall_tau_b(["a", "b", "c", "d"], ["d", "c", "b", "a"]) == -1.0
    with pytest.raises(ValueError, match="equal length"):
        kendall_tau_b(["a"], ["a", "b"])


def _brute_tau_b(x: list[str], y: list[str]) -> float:
    """Tau-b straight from the definition, O(n^2)."""
    n = len(x)
    concordant = discordant = x_only = y_only = 0
    for i, j in itertools.combinations(range(n), 2):
        dx = (x[i] > x[j]) - (x[i] < x[j])
        dy = (y[i] > y[j]) - (y[i] < y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            x_only += 1
        elif dy == 0:
            y_only += 1
        elif dx == dy:
            concordant += 1
        else:
            discordant += 1
    denominator = math.sqrt((concordant + discordant + x_only) * (concordant + discordant + y_only))
    return math.nan if denominator == 0 else (concordant - discordant) / denominator


def test_kendall_tau_matches_the_definition() -> None:
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(2, 30)
        k = rng.randint(1, 8)
        x = [f"('{rng.randint(0, k)}',)" for _ in range(n)]
        y = [f"('{rng.randint(0, k)}',)" for _ in range(n)]
        expected, got = _brute_tau_b(x, y), kendall_tau_b(x, y)
        assert (math.isnan(expected) and math.isnan(got)) or got == pytest.approx(expected)


def test_kendall_tau_is_fast_on_large_results() -> None:
    rows = [f"({i},)" for i in range(50_000)]
    assert kendall_tau_b(rows, rows) == 1.0
    assert reward_from_strings(rows, rows) == 1.0


def test_rounding_is_numpys_half_to_even() -> None:
    assert _np_round2(0.125) == 0.12
    assert _np_round2(0.375) == 0.38
    assert _np_round2(-0.2) == -0.2
