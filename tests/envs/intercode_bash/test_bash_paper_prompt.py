"""The InterCode-Bash paper prompt (profile paper): InterCode's ReAct template with numbered
Thought, Action and Observation lines and observations in InterCode's format (the raw output,
no exit-status line, nothing for an empty output); the profile selects it with numbered turns,
10 in all, and no patience rule."""

from __future__ import annotations

import re
from pathlib import Path

from adapt.engine import RunConfig
from adapt.engine.resolve import resolve_config
from adapt.envs.intercode_bash import InterCodeBash

PROMPT = Path(__file__).parents[3] / "adapt/envs/intercode_bash/prompts/paper/executor.txt"


def test_the_prompt_is_intercodes_template() -> None:
    text = PROMPT.read_text(encoding="utf-8")
    assert "[exit status" not in text and "(no output)" not in text
    assert text.endswith("Question: $goal\n$context\n")
    for question in text.split("Question: ")[1:-1]:
        numbers = [int(n) for n in re.findall(r"^Thought (\d+): ", question, re.MULTILINE)]
        assert numbers == list(range(1, len(numbers) + 1))
        assert re.findall(r"^Action (\d+): ", question, re.MULTILINE) == [str(n) for n in numbers]
        assert question.rstrip().endswith(f"Action {numbers[-1]}: submit")


def test_paper_selects_it_with_numbered_turns() -> None:
    out, env_config = resolve_config(RunConfig(profile="paper", strategy="react"), InterCodeBash)
    assert env_config == {"observation": "intercode", "prompts": "paper"}
    assert (out.executor.react_format, out.executor.patience, out.react_steps) == (
        "numbered", None, 10)
    assert InterCodeBash.prompt_sets == {"paper": frozenset({"executor"})}
