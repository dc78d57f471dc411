"""Compile a behaviour formula to a deterministic finite-state machine over state names.

``next`` is concatenation, ``(until a b)`` is zero or more ``a`` then ``b``, ``or`` is choice and
a bare name matches exactly that state. The formula becomes an epsilon-NFA (Thompson's
construction), then a DFA by subset construction; DFA state 0 is the start.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapt.engine.spec.model import Formula


@dataclass(slots=True)
class _NFA:
    eps: list[set[int]] = field(default_factory=list)
    moves: list[dict[str, set[int]]] = field(default_factory=list)

    def node(self) -> int:
        self.eps.append(set())
        self.moves.append({})
        return len(self.eps) - 1


def _build(nfa: _NFA, formula: Formula) -> tuple[int, int]:
    """Add ``formula`` to ``nfa``; return its (entry, exit) nodes."""
    from adapt.engine.spec.model import Op

    entry, exit_ = nfa.node(), nfa.node()
    if isinstance(formula, str):
        nfa.moves[entry].setdefault(formula, set()).add(exit_)
        return entry, exit_
    if not isinstance(formula, Op):
        raise TypeError(f"a behaviour formula is a state name or an Op, not {formula!r}")
    parts = [_build(nfa, arg) for arg in formula.args]
    if formula.op == "next":
        nfa.eps[entry].add(parts[0][0])
        for (_, a_out), (b_in, _) in pairwise(parts):
            nfa.eps[a_out].add(b_in)
        nfa.eps[parts[-1][1]].add(exit_)
    elif formula.op == "or":
        for p_in, p_out in parts:
            nfa.eps[entry].add(p_in)
            nfa.eps[p_out].add(exit_)
    else:  # until a b: a* b
        (a_in, a_out), (b_in, b_out) = parts
        nfa.eps[entry].update({a_in, b_in})
        nfa.eps[a_out].update({a_in, b_in})
        nfa.eps[b_out].add(exit_)
    return entry, exit_


def _closure(nfa: _NFA, nodes: set[int]) -> frozenset[int]:
    seen = set(nodes)
    todo = list(nodes)
    while todo:
        for nxt in nfa.eps[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return frozenset(seen)


@dataclass(frozen=True, slots=True)
class FSM:
    """A DFA over state names. ``transitions[q][name]`` is the next DFA state."""

    transitions: tuple[dict[str, int], ...]
    accepting: frozenset[int]
    #: per DFA state, the fewest transitions to an accepting state (None: unreachable)
    distance: tuple[int | None, ...]
    start: int = 0

    def step(self, q: int, name: str) -> int | None:
        return self.transitions[q].get(name)

    def next_names(self, q: int) -> list[str]:
        return list(self.transitions[q])

    def is_accepting(self, q: int) -> bool:
        return q in self.accepting

    def accepts(self, names: list[str]) -> bool:
        q: int | None = self.start
        for name in names:
            q = self.step(q, name) if q is not None else None
            if q is None:
                return False
        return q is not None and self.is_accepting(q)

    def closest_names(self, q: int) -> list[str]:
        """The next names on a shortest path to acceptance (used when generation stops early)."""
        best: list[str] = []
        best_d: int | None = None
        for name, target in self.transitions[q].items():
            d = self.distance[target]
            if d is None:
                continue
            if best_d is None or d < best_d:
                best, best_d = [name], d
            elif d == best_d:
                best.append(name)
        return best


def compile_formula(formula: Formula) -> FSM:
    nfa = _NFA()
    entry, exit_ = _build(nfa, formula)
    start = _closure(nfa, {entry})
    index: dict[frozenset[int], int] = {start: 0}
    transitions: list[dict[str, int]] = [{}]
    todo = deque([start])
    while todo:
        current = todo.popleft()
        moves: dict[str, set[int]] = {}
        for n in current:
            for name, targets in nfa.moves[n].items():
                moves.setdefault(name, set()).update(targets)
        for name in sorted(moves):
            target = _closure(nfa, moves[name])
            if target not in index:
                index[target] = len(transitions)
                transitions.append({})
                todo.append(target)
            transitions[index[current]][name] = index[target]
    accepting = frozenset(i for s, i in index.items() if exit_ in s)
    # distance to acceptance: BFS on the reversed graph
    distance: list[int | None] = [None] * len(transitions)
    reverse: list[set[int]] = [set() for _ in transitions]
    for q, moves_q in enumerate(transitions):
        for successor in moves_q.values():
            reverse[successor].add(q)
    queue = deque(accepting)
    for q in accepting:
        distance[q] = 0
    while queue:
        q = queue.popleft()
        for prev in reverse[q]:
            if distance[prev] is None:
                distance[prev] = (distance[q] or 0) + 1
                queue.append(prev)
    return FSM(tuple(transitions), accepting, tuple(distance))
