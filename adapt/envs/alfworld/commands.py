"""What the agent may type, and how it reaches the engine.

ALFWorld 0.4.2's grammar says ``move X to Y`` where the papers' prompts (ReAct, ADaPT, StateAct)
say ``put X in/on Y``. Both reach the engine as ``move X to Y``: ``put X in/on Y``, ``put X in
Y``, ``put X on Y`` (StateAct's correction), ``put X into Y`` and ``put X onto Y`` are rewritten.
Case, repeated spaces, a leading ``>``, a final ``.`` and a leading ``the`` before an object
(``take the mug 1 from the countertop 1``) do not matter.

With ``near_miss`` on (off by default), a command that is still not admissible is mapped to the
closest admissible command when one is close enough (``difflib`` ratio >= ``cutoff``); with
``near_miss="bleu"`` (profile paper, the stateflow executor) to the admissible command with the
highest sentence BLEU against it when that is above ``BLEU_LIMIT``, as StateFlow's ALFWorld code
does (the action cut at its first ``.``; BLEU-4 on whitespace tokens, uniform weights, Chen and
Cherry's smoothing 4 with k = 5, as NLTK's ``sentence_bleu``); the step's ``info`` says so
(``mapped_to``).
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Sequence

_PUT = re.compile(r"put (.+?) (?:in/on|in / on|into|onto|in|on|to) (.+)")
_ARTICLE = re.compile(r"(?<=\s)the\s+(?=\S+\s\d)")
_SPACES = re.compile(r"\s+")

#: how close a near miss must be (``difflib.SequenceMatcher.ratio``)
DEFAULT_CUTOFF = 0.85
#: the BLEU a mapped command must exceed (StateFlow's ``process_action``)
BLEU_LIMIT = 0.01
#: n-gram orders of BLEU, and the constant of smoothing method 4
_ORDERS = 4
_SMOOTHING_K = 5


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


def bleu(reference: str, candidate: str) -> float:
    """Sentence BLEU-4 of ``candidate`` against one ``reference`` (whitespace tokens, uniform
    weights, smoothing method 4 of Chen and Cherry, 2014, with k = 5): the score NLTK's
    ``sentence_bleu`` with ``SmoothingFunction().method4`` gives (checked against NLTK 3.8.1,
    current when StateFlow was published, and 3.10). 0 when no word matches."""
    ref, hyp = reference.split(), candidate.split()
    if not hyp:
        return 0.0
    precisions: list[tuple[int, int]] = []
    for n in range(1, _ORDERS + 1):
        grams = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
        ref_grams = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
        matched = sum(min(count, ref_grams[gram]) for gram, count in grams.items())
        precisions.append((matched, max(1, sum(grams.values()))))
    if precisions[0][0] == 0:
        return 0.0
    logs: list[float] = []
    smoothed = 0
    for matched, total in precisions:
        if matched:
            logs.append(math.log(matched / total))
        elif len(hyp) > 1:  # smoothing 4: 1 / (2^j k / ln |candidate|) for the j-th zero
            smoothed += 1
            logs.append(math.log(math.log(len(hyp)) / (2**smoothed * _SMOOTHING_K * total)))
        # else: NLTK leaves the zero precision out of the sum
    brevity = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return brevity * math.exp(math.fsum(w * x for w, x in zip([1 / _ORDERS] * _ORDERS, logs,
                                                              strict=False)))


def bleu_match(action: str, admissible: Sequence[str], limit: float = BLEU_LIMIT) -> str | None:
    """The admissible command with the highest BLEU against ``action`` (the first on a tie), if
    that is above ``limit``, as StateFlow's ALFWorld code maps every action; ``None`` for an
    admissible ``action`` or when none is above the limit."""
    if not action or action in admissible:
        return None
    scores = [bleu(choice, action) for choice in admissible]
    if not scores:
        return None
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    return admissible[best] if scores[best] > limit else None


def first_sentence(action: str) -> str:
    """The action up to its first ``.`` (StateFlow's code cuts there before mapping)."""
    return action.split(".", 1)[0].strip()
