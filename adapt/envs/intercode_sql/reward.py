"""InterCode-SQL's reward, as pure functions (no database).

InterCode (Yang et al., 2023; ``intercode/envs/sql/sql_env.py``, ``SqlEnv.get_reward``) scores a
submission by comparing the result rows of the agent's last query with those of the gold query:

1. Every row is turned into a string (``str(row)`` of the driver's tuple), so rows compare as
   strings, and each side becomes a multiset (a ``Counter``).
2. If the agent has no result (its last action was an error, a statement without a result set,
   or it never ran a query) the reward is ``0.0``.
3. If both results are empty the reward is ``1.0``.
4. Otherwise ``iou = |A ∩ G| / |A ∪ G|`` on the multisets (intersection: the smaller count of each
   row, union: the larger count).
5. If the intersection is not empty, the intersecting rows are listed in the agent's order and in
   the gold order (each list keeps, from left to right, the first ``min(count)`` occurrences of
   each common row) and the reward becomes ``round(tau * iou, 2)``, where ``tau`` is
   ``scipy.stats.kendalltau(agent_list, gold_list)`` (tau-b). When tau is undefined (NaN: fewer
   than two common rows, or one of the lists consists of a single distinct value) the reward
   stays the unrounded ``iou``.

Details reproduced on purpose, so that scores match InterCode's:

- Kendall tau pairs the two lists *position by position* and compares the row strings by their
  (code point) order, exactly as scipy does on string arrays; it is not the rank correlation of
  the row positions. With a gold result in string order the two coincide.
- The reward can be negative: rows in reverse order give ``tau = -1`` and ``-iou``.
- The rounding is numpy's (``np.round(x, 2)``: scale by 100, round half to even, scale back).

Tau-b is computed here without scipy, in O(n log n) (Knight's algorithm, as scipy does).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

__all__ = [
    "intersecting_items",
    "intersection_over_union",
    "kendall_tau_b",
    "reward",
    "reward_from_strings",
    "row_strings",
]


def row_strings(rows: Sequence[Sequence[object]]) -> list[str]:
    """Every row as InterCode compares it: ``str`` of the row as a tuple."""
    return [str(tuple(row)) for row in rows]


def intersection_over_union(agent: Sequence[str], gold: Sequence[str]) -> float:
    """``|A ∩ G| / |A ∪ G|`` of the two multisets; ``1.0`` when both are empty."""
    a, g = Counter(agent), Counter(gold)
    union = sum((a | g).values())
    if union == 0:
        return 1.0
    return sum((a & g).values()) / union


def intersecting_items(items: Sequence[str], common: Counter[str]) -> list[str]:
    """The items of ``items`` in order, keeping each common item at most ``common[item]`` times
    (its first occurrences), as InterCode's ``get_intersect_items``."""
    left = Counter(common)
    out: list[str] = []
    for item in items:
        if left[item] > 0:
            left[item] -= 1
            out.append(item)
    return out


def _tie_pairs(values: Sequence[int]) -> int:
    """Pairs of equal values: sum of c*(c-1)/2 over the counts c."""
    return sum(c * (c - 1) // 2 for c in Counter(values).values())


def _dense_ranks(values: Sequence[str]) -> list[int]:
    order = {v: i for i, v in enumerate(sorted(set(values)))}
    return [order[v] for v in values]


def _discordant(ys: Sequence[int], size: int) -> int:
    """Strict inversions of ``ys`` (pairs i < j with ys[i] > ys[j]), with a Fenwick tree."""
    tree = [0] * (size + 1)
    inversions = 0
    for seen, y in enumerate(ys):
        # count previous values <= y
        i, not_greater = y + 1, 0
        while i > 0:
            not_greater += tree[i]
            i -= i & -i
        inversions += seen - not_greater
        i = y + 1
        while i <= size:
            tree[i] += 1
            i += i & -i
    return inversions


def kendall_tau_b(x: Sequence[str], y: Sequence[str]) -> float:
    """Kendall's tau-b of the paired observations ``(x[i], y[i])``, values compared as strings.

    Equals ``scipy.stats.kendalltau(x, y).statistic``; ``nan`` when it is undefined (fewer than
    two pairs, or all values of one side equal).
    """
    if len(x) != len(y):
        raise ValueError(f"kendall_tau_b needs lists of equal length, got {len(x)} and {len(y)}")
    n = len(x)
    if n < 2:
        return math.nan
    rx, ry = _dense_ranks(x), _dense_ranks(y)
    pairs = sorted(zip(rx, ry, strict=True))
    total = n * (n - 1) // 2
    x_ties = _tie_pairs(rx)
    y_ties = _tie_pairs(ry)
    joint_ties = sum(c * (c - 1) // 2 for c in Counter(pairs).values())
    if x_ties == total or y_ties == total:
        return math.nan
    discordant = _discordant([p[1] for p in pairs], max(ry) + 1)
    concordant_minus_discordant = total - x_ties - y_ties + joint_ties - 2 * discordant
    tau = concordant_minus_discordant / math.sqrt(total - x_ties) / math.sqrt(total - y_ties)
    return min(1.0, max(-1.0, tau))


def _np_round2(value: float) -> float:
    """``numpy.round(value, 2)``: scale, round half to even, scale back."""
    return round(value * 100.0) / 100.0


def reward(
    agent_rows: Sequence[Sequence[object]] | None, gold_rows: Sequence[Sequence[object]]
) -> float:
    """InterCode's reward of the agent's last result against the gold result.

    ``agent_rows`` is ``None`` when the agent has no result (last action failed or returned no
    result set): reward ``0.0``. See the module docstring for the formula.
    """
    if agent_rows is None:
        return 0.0
    return reward_from_strings(row_strings(agent_rows), row_strings(gold_rows))


def reward_from_strings(agent: Sequence[str], gold: Sequence[str]) -> float:
    """``reward`` on rows already turned into strings."""
    a, g = Counter(agent), Counter(gold)
    union = sum((a | g).values())
    if union == 0:
        return 1.0
    common = a & g
    iou = sum(common.values()) / union
    if not common:
        return iou
    tau = kendall_tau_b(intersecting_items(agent, common), intersecting_items(gold, common))
    if math.isnan(tau):
        return iou
    return _np_round2(tau * iou)
