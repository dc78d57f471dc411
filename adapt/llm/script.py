"""``script:`` models: answers written in advance, to run any environment offline.

A script is JSON, given in the model spec (``script:{...}``) or, on the command line, in a file
(``script:@my-script.json``)::

    {"executor": ["take match", "think: I hold the match. Task completed!", "light lamp"],
     "planner": ["Step 1: take the match\\nStep 2: light the lamp\\n"
                 "Execution Order: (Step 1 AND Step 2)"],
     "rules": [{"when": "^You see: .*match", "then": "take match"}]}

A JSON list is short for ``{"executor": [...]}``. How an answer is chosen, for each call:

1. an executor call tries the ``rules`` in order: the first whose ``when`` (a regular
   expression) is found in the last observation answers with its ``then``. The last
   observation is the prompt's text after its last ``> `` action line; before a (sub-)task's
   first step that is the end of the prompt: the task and its context;
2. otherwise the next unused answer of the call's role (``executor`` or ``planner``);
3. when the role has none left: the executor gives up (``think: ... Task failed!``) and the
   planner answers a plan with no steps, so the node fails and says so.

The model reads nothing else and never fails on its own, so a script is a deterministic
stand-in for an LLM: a plug-in author drives their environment end to end with it, offline.
Its calls cost nothing and are marked simulated. A resumed task continues the script where
the recorded calls left it (:meth:`ScriptModel.replayed`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from adapt.errors import ModelSpecError
from adapt.llm.base import ChatRequest, ChatResponse, Usage

SCRIPT_PREFIX = "script:"
#: what a script example looks like, for error messages
EXAMPLE = ('script:{"executor": ["look", "take key", "think: Task completed!"], '
           '"planner": ["Step 1: take the key\\nExecution Order: (Step 1)"]}')
#: the answers when a role's list is used up
EXHAUSTED = {
    "executor": "think: The script has no answer left for this step. Task failed!",
    "planner": "The script has no plan left.",
}
_ACTION_LINE = re.compile(r"^> ", re.MULTILINE)


class ScriptRule(BaseModel):
    """An executor answer chosen by what the environment last said."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    when: str = Field(min_length=1, description="a regular expression (Python syntax), "
                      "searched in the last observation")
    then: str = Field(description="the executor's answer: an action, or a 'think: ...' line")

    @field_validator("when")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value


class Script(BaseModel):
    """What a ``script:`` model answers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    executor: list[str] = Field(default_factory=list,
                                description="the executor's answers, in order")
    planner: list[str] = Field(default_factory=list,
                               description="the planner's answers (whole plans), in order")
    rules: list[ScriptRule] = Field(default_factory=list,
                                    description="tried first, for executor calls")

    def canonical(self) -> str:
        """Compact JSON, the same for the same script (what a stored spec keeps)."""
        return json.dumps(self.model_dump(exclude_defaults=True), ensure_ascii=False,
                          separators=(",", ":"))


def parse_script(text: str) -> Script:
    """A script from its JSON text; raises ``ModelSpecError`` saying what is wrong."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelSpecError(f"script: is not valid JSON ({exc.msg} at position {exc.pos}); "
                             f"e.g. {EXAMPLE}") from None
    if isinstance(data, list):
        data = {"executor": data}
    try:
        script = Script.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'script'}: {e['msg']}"
            for e in exc.errors())
        raise ModelSpecError(f"invalid script: {problems}; e.g. {EXAMPLE}") from None
    if not (script.executor or script.planner or script.rules):
        raise ModelSpecError(f"empty script: give executor or planner answers, or rules; "
                             f"e.g. {EXAMPLE}")
    return script


def script_text(model: str, *, allow_files: bool) -> str:
    """The JSON text of a ``script:`` spec's model part: inline, or ``@path`` read from a
    file (only where ``allow_files``: the operator's command line, never the API)."""
    text = model.strip()
    if not text.startswith("@"):
        return text
    if not allow_files:
        raise ModelSpecError("script: files (script:@path) are read only by the command line; "
                             f"give the script inline, e.g. {EXAMPLE}")
    path = Path(text[1:]).expanduser()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelSpecError(f"cannot read the script file {str(path)!r}: "
                             f"{exc.strerror or exc}") from None


def last_observation(prompt: str) -> str:
    """The prompt's text after its last ``> `` action line (the final ``> `` excluded)."""
    body = prompt[:-2] if prompt.endswith("> ") else prompt
    lines = list(_ACTION_LINE.finditer(body))
    if not lines:
        return body
    end = body.find("\n", lines[-1].start())
    return body[end + 1:] if end >= 0 else ""


def _tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


class ScriptModel:
    """A ``ChatModel`` that answers from a :class:`Script` (see the module's docstring)."""

    simulated = True

    def __init__(self, script: Script, name: str = "script") -> None:
        self.script = script
        self.name = name
        self.used: dict[str, int] = {}  # answers taken from each role's list

    @classmethod
    def from_spec(cls, model: str, *, allow_files: bool = False) -> ScriptModel:
        """From the part of a ``script:`` spec after the prefix."""
        return cls(parse_script(script_text(model, allow_files=allow_files)))

    def answer(self, request: ChatRequest) -> str:
        """The answer to ``request``; takes the role's next answer when no rule applies."""
        role = request.role
        if role == "executor" and self.script.rules:
            observation = last_observation(request.as_prompt())
            for rule in self.script.rules:
                if re.search(rule.when, observation, re.MULTILINE):
                    return rule.then
        answers = (self.script.executor if role == "executor" else
                   self.script.planner if role == "planner" else [])
        index = self.used.get(role, 0)
        if index < len(answers):
            self.used[role] = index + 1
            return answers[index]
        return EXHAUSTED.get(role, f"think: The script has no answers for {role}. Task failed!")

    async def complete(self, request: ChatRequest) -> ChatResponse:
        text = self.answer(request)
        usage = Usage(prompt_tokens=_tokens(request.as_prompt()),
                      completion_tokens=_tokens(text), estimated=True)
        return ChatResponse(text=text, usage=usage, model=self.name, simulated=True,
                            finish_reason="stop")

    def replayed(self, request: ChatRequest, response: ChatResponse) -> None:
        """A recorded answer to ``request`` was replayed: move on as if this model had
        answered it, so a resumed task continues the script where it stopped."""
        self.answer(request)
