"""InterCode-Bash's reward, as pure functions (no sandbox).

InterCode (Yang et al., 2023; ``intercode/envs/bash/bash_env.py``, ``BashEnv.get_reward``) runs
the gold command in a fresh container of the same file system and scores the agent's container
against it in three parts of 0.33 each, after a base of 0.01:

1. File system: ``round(0.33 * (1 - erf(n)), 2)`` where ``n`` counts the ``(path, status)`` pairs
   of ``git status --short`` found on only one side (the symmetric difference of the two sets;
   a path modified by the agent but deleted by the gold counts twice).
2. File contents: among the pairs both sides share whose status is ``A``, ``??`` or ``C`` (in
   practice: new, untracked paths), the share whose ``md5sum`` output agrees, scaled by 0.33 and
   rounded to 2 places; 0.33 when there are none. InterCode hashes a path without a ``.`` in its
   name with ``md5deep -r``, a program its image does not install, so both sides print the same
   error and such paths always agree; that is reproduced (``content_agrees`` is only asked about
   paths with a ``.``). Modified (`` M``) paths are not compared, as in InterCode.
3. Output: 0.33 x the TF-IDF cosine similarity of the two last outputs, rounded as numpy rounds
   (``np.round``: scale by 100, round half to even); the vectorizer is scikit-learn's
   ``TfidfVectorizer()`` with its defaults, fitted on the two outputs (lower-cased, tokens of two
   or more word characters, raw counts, smooth idf ``ln((1 + n) / (1 + df)) + 1``, L2-normalised
   rows). When it cannot be fitted (no token in either output, or an output is missing) the
   similarity is 1 if the outputs are equal, else 0.

The parts are added in this order, so a perfect score is exactly ``1.0``. The TF-IDF is
reimplemented here (a test checks it against the formula and, where installed, scikit-learn).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BashReward", "reward", "tfidf_similarity", "tokens"]

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
#: statuses whose paths' contents are compared (InterCode's filter)
CONTENT_STATUSES = ("A", "??", "C")


def tokens(text: str) -> list[str]:
    """scikit-learn's default analyzer: lower-case, then every run of 2+ word characters."""
    return _TOKEN.findall(text.lower())


def _np_round2(value: float) -> float:
    """``np.round(value, 2)``: multiply by 100, round half to even, divide by 100."""
    return round(value * 100.0) / 100.0


def tfidf_similarity(agent: str | None, gold: str | None) -> tuple[float, bool]:
    """The cosine similarity of the two outputs' TF-IDF vectors, and whether the vectorizer
    could be fitted (``False``: the equality fallback was used)."""
    if agent is None or gold is None:
        return (1.0 if agent == gold else 0.0), False
    docs = [Counter(tokens(agent)), Counter(tokens(gold))]
    vocabulary = sorted(set(docs[0]) | set(docs[1]))
    if not vocabulary:
        return (1.0 if agent == gold else 0.0), False
    n = 2
    idf = {t: math.log((1 + n) / (1 + sum(1 for d in docs if t in d))) + 1.0 for t in vocabulary}
    rows: list[dict[str, float]] = []
    for doc in docs:
        row = {t: doc[t] * idf[t] for t in vocabulary if t in doc}
        norm = math.sqrt(sum(v * v for v in row.values()))
        rows.append({t: v / norm for t, v in row.items()} if norm > 0 else {})
    common = [t for t in vocabulary if t in rows[0] and t in rows[1]]
    return sum(rows[0][t] * rows[1][t] for t in common), True


@dataclass(frozen=True, slots=True)
class BashReward:
    """The reward and its parts (InterCode's ``info`` keys)."""

    reward: float
    file_diff: float
    file_changes: float
    answer_similarity: float
    similarity: float
    diff_miss: list[tuple[str, str]] = field(default_factory=list)
    diff_extra: list[tuple[str, str]] = field(default_factory=list)
    diff_same: list[tuple[str, str]] = field(default_factory=list)
    same_correct: int = 0

    def info(self) -> dict[str, Any]:
        return {
            "reward_parts": {"file_diff": self.file_diff, "file_changes": self.file_changes,
                             "answer_similarity": self.answer_similarity},
            "similarity": self.similarity,
            "diff_miss": [list(x) for x in self.diff_miss],
            "diff_extra": [list(x) for x in self.diff_extra],
            "diff_same": {"files": [list(x) for x in self.diff_same],
                          "correct": self.same_correct, "total": len(self.diff_same)},
        }


def reward(
    agent_status: Sequence[tuple[str, str]],
    gold_status: Sequence[tuple[str, str]],
    agent_output: str | None,
    gold_output: str | None,
    content_agrees: Callable[[str], bool],
) -> BashReward:
    """InterCode's reward from the two sides' ``(path, status)`` pairs (``parse_status``), their
    last outputs, and ``content_agrees(path)``: whether ``md5sum path`` prints the same on both
    sides (asked only for shared new paths whose name has a ``.``)."""
    agent_set, gold_set = set(agent_status), set(gold_status)
    miss = sorted(gold_set - agent_set)
    extra = sorted(agent_set - gold_set)
    file_diff = round(0.33 * (1 - math.erf(len(miss) + len(extra))), 2)
    same = sorted(x for x in agent_set & gold_set if x[1] in CONTENT_STATUSES)
    file_changes = 0.33
    correct = 0
    if same:
        correct = sum(1 for path, _ in same if "." not in path or content_agrees(path))
        file_changes = round(0.33 * (correct / len(same)), 2)
    similarity, fitted = tfidf_similarity(agent_output, gold_output)
    answer = _np_round2(0.33 * similarity) if fitted else round(0.33 * similarity, 2)
    total = 0.01 + file_diff + file_changes + answer
    return BashReward(total, file_diff, file_changes, answer, similarity, miss, extra, same,
                      correct)
