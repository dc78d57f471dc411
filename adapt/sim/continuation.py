"""Continuing a partly written answer, as the decoding monitor asks a model to.

When the monitor cuts a malformed output and appends a correction prefix, the resumed prompt
is the original prompt plus the model's own kept text plus the prefix (``> get `` for an
executor step, or the first lines of a plan ending with ``Execution Order:``). A real model
continues that text; the simulator does the same: it decides its answer for the original
prompt (content draws from the original prompt, so the answer is the one it was writing) with
fresh format draws (from the whole resumed prompt, so a format slip is not simply repeated),
and returns what follows the partial text.
"""

from __future__ import annotations

import re

from adapt.sim.prompt_parse import COMMANDS_HEADER

_PLAN_LINE = re.compile(r"^(?:# Think:|Step\b|Execution Order:)")
_ORDER_PREFIX = "Execution Order:"


def split_partial(prompt: str) -> tuple[str, str] | None:
    """``(original prompt, partial answer)`` when ``prompt`` ends inside an answer."""
    last_newline = prompt.rfind("\n")
    last_line = prompt[last_newline + 1:]
    if last_line.startswith("> ") and last_line[2:].strip():
        return prompt[:len(prompt) - len(last_line) + 2], last_line[2:]
    start = prompt.rfind(COMMANDS_HEADER)
    if start < 0:
        return None
    goal = prompt.find("\nGoal:", start)
    if goal < 0:
        return None
    offset = prompt.find("\n", goal + 1)
    while offset >= 0:
        line_start = offset + 1
        line_end = prompt.find("\n", line_start)
        line = prompt[line_start:] if line_end < 0 else prompt[line_start:line_end]
        if _PLAN_LINE.match(line):
            return prompt[:line_start], prompt[line_start:]
        offset = line_end
    return None


def continue_text(intended: str, partial: str) -> str:
    """What follows ``partial`` when the model meant to write ``intended``."""
    if intended.startswith(partial):
        return intended[len(partial):]
    done = partial.split("\n")
    current = done.pop()  # the line being written ("" right after a newline)
    lines = intended.split("\n")
    rest = lines[len(done):]
    for i, line in enumerate(rest):
        if line.startswith(current):
            return "\n".join([line[len(current):], *rest[i + 1:]])
    if current.strip() == _ORDER_PREFIX:
        steps = sum(1 for line in done if line.startswith("Step"))
        return " (" + " AND ".join(f"Step {i + 1}" for i in range(steps)) + ")"
    return "\n".join(rest)
