"""What the agent may type, and how it reaches the engine.

ALFWorld 0.4.2's grammar says ``move X to Y`` where the papers' prompts (ReAct, ADaPT, StateAct)
say ``put X in/on Y``. Both reach the engine as ``move X to Y``: ``put X in/on Y``, ``put X in
Y``, ``put X on Y`` (StateAct's correction), ``put X into Y`` and ``put X onto Y`` are rewritten.
Case, repeated spaces, a leading ``>``, a final ``.`` and a leading ``the`` before an object
(``take the mug 1 from the countertop 1``) do not matter.

With ``near_miss`` on (off by default), a command that is still not admissible is mapped to the
closest admissible command when one is close enough (``difflib`` ratio >= ``cutoff``), as
StateFlow did; the step's ``info`` says so (``mapped_to``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

_PUT = re.compile(r"put (.+?) (?:in/on|in / on|into|onto|in|on|to) (.+)")
_ARTICLE = re.compile(r"(?<=\s)the\s+(?=\S+\s\d)")
_SPACES = re.compile(r"\s+")

#: how close a near miss must be (``difflib.SequenceMatcher.ratio``)
DEFAULT_CUTOFF = 0.85


def normalise(action: str) -> str:
    """The command as the engine spells it (see the module docstring)."""
    text = _SPACES.sub(" ", action).strip()
    if text.startswith(">"):
        text = text[1:].strip()
    text = text.rstrip(".").strip().lower()
    text = _ARTICLE.sub("", f" {text}").strip()
    m = _PUT.fullmatch(text)
    if m is not None:
        text = f"move {m.group(1)} to {m.group(2)}"
    return text


def near_miss(command: str, admissible: Sequence[str], cutoff: float = DEFAULT_CUTOFF) -> str | None:
    """The admissible command closest to ``command`` if it is at least ``cutoff`` similar."""
    if not command or command in admissible:
        return None
    found = difflib.get_close_matches(command, list(admissible), n=1, cutoff=cutoff)
    return found[0] if found else None
