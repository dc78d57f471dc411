"""What ALFWorld's state decides about a sub-goal: holding an object, standing at a receptacle.

The planner writes sub-goals in many phrasings (``find and take a soapbottle``, ``find and take
another soapbottle``, ``take the second soapbottle``, ``pick up a clean mug``, ``take 1 mug
from the countertop``, ``go to the countertop``). :func:`check` reads the object phrase --
determiners, ordinals and counts stripped, a plural read as its singular, two words joined
(``soap bottle``) -- and decides only what it is sure of:

- ``confirmed``: the agent holds a matching object (stands at a matching receptacle); for
  ``another`` / ``second`` / ``other`` X, one it did not hold when the node started;
- ``refuted``: the object (receptacle) kind is one of the game's and the agent holds no such
  object (stands elsewhere), or a named instance (``mug 1``) is not the one held;
- ``unknown`` otherwise: a phrase it cannot read with confidence (a word that is not an object
  kind of the game, ``take a look``), a state adjective it cannot check (``a clean mug`` while
  holding a mug: cleaned or not, the state here does not say), a count above one (the agent
  holds one object at a time), a compound goal (``take a mug and put it in the coffeemachine``),
  or ``another`` X while holding only the X held at the start.

A sub-goal is never refuted on a guess: a false refutation fails a sub-goal that succeeded.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from adapt.envs.verdicts import UNKNOWN, Verification

_TAKE = re.compile(r"^(?:find and |go and )?(?:take|pick up|grab)\s+(.+)$")
_GO = re.compile(r"^go to\s+(.+)$")
#: what may follow the object: where it is taken from (kept out of the phrase)
_WHERE = re.compile(r"\s+(?:from|in|on|at|inside|off|out of|near|under|beside|next to)\s.*$")
#: a second action in the same sub-goal: the state of the first does not decide it
_COMPOUND = re.compile(r"(?:\b(?:and|then|to|into|onto|put|place|bring|with)\b|[,;])")
#: the same after the place it is taken from (``... from the cabinet and put it ...``)
_THEN = re.compile(r"(?:\b(?:and|then|put|place|bring|move)\b|[,;])")
_DETERMINERS = frozenset({"a", "an", "the", "some", "any", "this", "that", "first", "1st"})
_ANOTHER = frozenset({"another", "other", "second", "2nd", "third", "3rd", "next",
                      "different", "new", "remaining"})
_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "both": 2, "all": 2, "several": 2}
#: states an object can be brought to (or words for them); the household state here says
#: nothing about them, so they make a match ``unknown``
_STATES = frozenset({"clean", "cleaned", "washed", "rinsed", "dirty", "hot", "heated", "warm",
                     "warmed", "cool", "cooled", "cold", "chilled", "sliced"})
_KINDS = re.compile(r"\b([A-Za-z]+)Type\s*[#-]\s*[or]type\b")


@dataclass(frozen=True)
class Phrase:
    """An object (receptacle) phrase read with confidence."""

    kind: str                 # ``soapbottle``
    number: str | None        # ``2`` in ``soapbottle 2``
    another: bool             # ``another`` / ``second`` / ``other`` ...
    count: int                # ``two soapbottles``: 2
    states: tuple[str, ...]   # ``clean``, ``hot`` ...

    def __str__(self) -> str:
        return self.kind if self.number is None else f"{self.kind} {self.number}"


def game_kinds(pddl_problem: str) -> frozenset[str]:
    """The object and receptacle kinds a game's PDDL problem declares (``soapbottle``, ...)."""
    return frozenset(m.group(1).lower() for m in _KINDS.finditer(pddl_problem))


def _kind(words: Sequence[str], kinds: Collection[str]) -> str | None:
    """The game's kind these words name: the word, its singular, or two words joined."""
    if not words or not all(w.isalpha() for w in words) or len(words) > 2:
        return None
    joined = "".join(words)
    for candidate in (joined, joined[:-1] if joined.endswith("s") else "",
                      joined[:-2] if joined.endswith("es") else ""):
        if candidate and candidate in kinds:
            return candidate
    return None


def parse_phrase(text: str, kinds: Collection[str]) -> Phrase | None:
    """The object in ``text`` (``another soapbottle``, ``2 clean mugs``, ``mug 1``), or
    ``None`` when it does not name one of ``kinds`` with confidence."""
    words = text.split()
    another, count, states = False, 1, []
    while len(words) > 1:
        head = words[0]
        if head in _DETERMINERS:
            pass
        elif head in _ANOTHER:
            another = True
        elif head in _STATES:
            states.append(head)
        elif head in _COUNTS:
            count = max(count, _COUNTS[head])
        elif head.isdigit():
            count = max(count, int(head))
        else:
            break
        words = words[1:]
    number = None
    if len(words) > 1 and words[-1].isdigit():
        number = words[-1]
        words = words[:-1]
    kind = _kind(words, kinds)
    if kind is None:
        return None
    return Phrase(kind, number, another, count, tuple(states))


def _of_kind(name: str) -> str:
    return name.rsplit(" ", 1)[0] if name.rsplit(" ", 1)[-1].isdigit() else name


def _near(a: str, b: str) -> bool:
    """Kinds one of which contains the other (``knife`` / ``butterknife``, ``sink`` /
    ``sinkbasin``): the planner may mean either, so neither confirms nor refutes."""
    return a != b and (a in b or b in a)


def check_take(goal: str, held: Sequence[str], held_at_start: Collection[str] | None,
               kinds: Collection[str]) -> Verification | None:
    """The verdict on a take sub-goal, ``None`` when ``goal`` is not one."""
    m = _TAKE.match(goal)
    if m is None:
        return None
    rest = m.group(1)
    obj = _WHERE.sub("", rest)
    if _COMPOUND.search(obj) or _THEN.search(rest[len(obj):]):
        return UNKNOWN
    phrase = parse_phrase(obj, kinds)
    if phrase is None or phrase.count > 1:
        return UNKNOWN
    holding = ", ".join(held) or "nothing"
    if phrase.number is not None:
        if str(phrase) in held:
            return UNKNOWN if phrase.states else Verification("confirmed", f"holds {phrase}")
        if any(_near(_of_kind(h), phrase.kind) for h in held):
            return UNKNOWN
        return Verification("refuted", f"holds {holding}, not {phrase}")
    matching = [h for h in held if _of_kind(h) == phrase.kind]
    if not matching:
        if any(_near(_of_kind(h), phrase.kind) for h in held):
            return UNKNOWN
        return Verification("refuted", f"holds {holding}, no {phrase.kind}")
    if phrase.another:
        new = [h for h in matching if held_at_start is not None and h not in held_at_start]
        if not new:  # maybe the one it held before: not decidable
            return UNKNOWN
        matching = new
    if phrase.states:  # clean / hot / cool ...: not in what the state here tells
        return UNKNOWN
    return Verification("confirmed", f"holds {matching[0]}")


def check_go(goal: str, where: str | None, kinds: Collection[str]) -> Verification | None:
    """The verdict on a ``go to <receptacle>`` sub-goal, ``None`` when ``goal`` is not one."""
    m = _GO.match(goal)
    if m is None:
        return None
    text = m.group(1)
    if _COMPOUND.search(text):
        return UNKNOWN
    phrase = parse_phrase(_WHERE.sub("", text), kinds)
    if phrase is None or phrase.another or phrase.count > 1 or phrase.states:
        return UNKNOWN
    here = where or "the middle of the room"
    if where is not None and _near(_of_kind(where), phrase.kind):
        return UNKNOWN
    if phrase.number is not None:
        if where == str(phrase):
            return Verification("confirmed", f"is at {where}")
    elif where is not None and _of_kind(where) == phrase.kind:
        return Verification("confirmed", f"is at {where}")
    return Verification("refuted", f"is at {here}")


__all__ = ["Phrase", "check_go", "check_take", "game_kinds", "parse_phrase"]
