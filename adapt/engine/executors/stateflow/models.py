"""The StateFlow machine schema (pydantic), validated when a machine is loaded.

A machine is data (see ``machines/*.yaml``)::

    name: intercode_sql            # the environment it is written for
    description: ...
    initial: Init                  # the state the process starts in
    max_turns: 10                  # state visits before the run stops (a failure)
    on_max_turns: End              # optional: the final state recorded when turns run out
    header: ...                    # optional template, available to the others as $header
    action_regex: '...'            # optional: group 1 is the action in the model's output;
                                   #   without it (or no match) the first non-empty line
    stop: ["\\nObservation:"]      # stop sequences of the model calls
    max_tokens: 256                # optional: per model call (default: executor.max_tokens)
    check_prompt: ...              # optional template of the explicit yes/no model checks
    history:                       # how the context history ($trajectory) is written
      model: "$output\\n"          #   after a model call
      action: "Action: $action\\n" #   after a fixed action (one the model did not write)
      observation: "Observation: $observation\\n"
    profiles:                      # optional: a run profile's changes (deep-merged over
      paper:                       #   the machine: mappings key by key, anything else
        states:                    #   replaced; the merged machine is validated too)
          Observe:
            transitions: [{to: Solve}]
    states:
      Solve:
        instruction: ...           # the prompt template of the state's model calls
        outputs: [model, act]      # run in order on entering: model | act | {act: <action>}
                                   #   | {prompt: <text>} (a static prompt for the history)
        transitions:               # first match wins; no match: stay in the state
          - to: Error
            when: {source: observation, regex: '^Error'}  # a rule or a list (all hold)
          - to: End
            ask: Is the task solved?                   # explicit yes/no model check
          - to: Solve                                  # no condition: always
      End:
        final: success             # or failure; final states have no outputs or transitions

Rules (``source``: ...) look at what the current visit produced: ``output`` (the model's whole reply),
``action`` (the action sent to the environment), ``observation`` (the environment's answer) or
``failed`` (``yes`` when the environment counts the visit's last observation as a failed action,
its ``is_failure``, which may know more than the text shows, e.g. InterCode-Bash's exit status
under profile ``paper``; ``no`` after an action that did not fail; ``""`` when none ran);
or at ``task`` (the task observation, e.g. to route by ALFWorld's task type);
operators ``contains``, ``startswith``, ``equals`` or ``regex`` (exactly one), with
``ignore_case`` (default true) and ``negate``.

``examples`` (a list of ``{when: <rules on the task>, text: ...}``) gives ``$examples``: the text
of the first entry whose rules match the task, e.g. plan examples of the task's type.

Templates are ``string.Template`` texts. Variables: ``$task`` (the task observation),
``$context`` (the propagated salient state, or ""), ``$trajectory`` (the context history so
far), ``$header``, ``$state`` (the current state), ``$action``, ``$observation``, ``$output``
(the latest ones, or ""), ``$actions`` (the environment's action grammar), ``$examples``;
``$question`` in
``check_prompt``. History templates see ``$output``, ``$action``, ``$observation``, ``$state``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from string import Template
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

Source = Literal["output", "action", "observation", "failed", "task"]
OutputKind = Literal["model", "act", "prompt"]
FinalKind = Literal["success", "failure"]

#: variables of instruction, header, fixed action, prompt and question templates
VARIABLES = frozenset(
    {"task", "context", "trajectory", "header", "state", "action", "observation", "output",
     "actions", "examples"}
)
CHECK_VARIABLES = VARIABLES | {"question"}
HISTORY_VARIABLES = frozenset({"output", "action", "observation", "state"})

DEFAULT_ACTION_REGEX = r"(?im)^\s*Action\s*\d*\s*:\s*(.+?)\s*$"
DEFAULT_CHECK_PROMPT = (
    "$header\n\n$task\n$context\n$trajectory\n"
    "Question: $question\nAnswer with yes or no.\nAnswer:"
)


def deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` over ``base``: mappings merged key by key, any other value replaced."""
    out = dict(base)
    for key, value in overlay.items():
        old = out.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            out[key] = deep_merge(old, value)
        else:
            out[key] = value
    return out


def check_template(text: str, allowed: frozenset[str], where: str) -> None:
    """Raise ``ValueError`` for a malformed template or an unknown ``$variable``."""
    template = Template(text)
    if not template.is_valid():
        raise ValueError(f"{where}: malformed template (write $name, ${{name}} or $$ for '$')")
    unknown = sorted(set(template.get_identifiers()) - allowed)
    if unknown:
        raise ValueError(
            f"{where}: unknown template variable(s) {', '.join('$' + u for u in unknown)}; "
            f"available: {', '.join('$' + a for a in sorted(allowed))}"
        )


class Rule(BaseModel):
    """A string test on the last model output, action or observation."""

    model_config = ConfigDict(extra="forbid")

    source: Source
    contains: str | None = None
    startswith: str | None = None
    equals: str | None = None
    regex: str | None = None
    ignore_case: bool = True
    negate: bool = False

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: Any) -> Any:
        # YAML 1.1 reads an unquoted ``on:`` key as ``True``: accept it as ``source``.
        if isinstance(data, dict) and True in data and "source" not in data:
            data = {("source" if k is True else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _one_operator(self) -> Rule:
        ops = [n for n in ("contains", "startswith", "equals", "regex") if getattr(self, n)
               is not None]
        if len(ops) != 1:
            raise ValueError("a rule needs exactly one of contains, startswith, equals, regex "
                             f"(got {', '.join(ops) or 'none'})")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"invalid regex {self.regex!r}: {exc}") from None
        return self

    def matches(self, values: Mapping[str, str]) -> bool:
        text = values.get(self.source, "")
        if self.regex is not None:
            flags = re.IGNORECASE if self.ignore_case else 0
            hit = re.search(self.regex, text, flags) is not None
        else:
            left = text.strip()
            if self.ignore_case:
                left = left.lower()

            def norm(s: str) -> str:
                return s.lower() if self.ignore_case else s

            if self.contains is not None:
                hit = norm(self.contains) in left
            elif self.startswith is not None:
                hit = left.startswith(norm(self.startswith))
            else:
                hit = left == norm(self.equals or "").strip()
        return hit != self.negate


class Examples(BaseModel):
    """A text for ``$examples`` and when it applies (rules on the task: ``source: task``)."""

    model_config = ConfigDict(extra="forbid")

    when: list[Rule] = Field(default_factory=list)
    text: str

    @field_validator("when", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @field_validator("when")
    @classmethod
    def _on_the_task(cls, value: list[Rule]) -> list[Rule]:
        if any(rule.source != "task" for rule in value):
            raise ValueError("examples are chosen before the run starts: their rules can only "
                             "read the task (source: task)")
        return value

    def applies(self, task: str) -> bool:
        return all(rule.matches({"task": task}) for rule in self.when)


class Output(BaseModel):
    """An output function run on entering a state.

    ``model``: call the model with the state's instruction; ``act``: send an action to the
    environment (``text``: a fixed action template, else the action the model just wrote);
    ``prompt``: append a static prompt (``text``) to the context history.
    """

    model_config = ConfigDict(extra="forbid")

    kind: OutputKind
    text: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"kind": data}
        if isinstance(data, dict) and "kind" not in data and len(data) == 1:
            ((key, value),) = data.items()
            return {"kind": key, "text": value}
        return data

    @model_validator(mode="after")
    def _text(self) -> Output:
        if self.kind == "model" and self.text is not None:
            raise ValueError("the 'model' output takes no argument (the state's instruction is "
                             "its prompt)")
        if self.kind == "prompt" and not self.text:
            raise ValueError("a 'prompt' output needs its text, e.g. {prompt: 'Check again.'}")
        if self.text is not None:
            check_template(self.text, VARIABLES, f"{self.kind} output")
        return self


class Transition(BaseModel):
    """Go to ``to`` when every rule in ``when`` holds and, with ``ask``, the model says yes."""

    model_config = ConfigDict(extra="forbid")

    to: str
    when: list[Rule] = Field(default_factory=list)
    ask: str | None = Field(default=None, description="a yes/no question for the model")

    @field_validator("when", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @field_validator("ask")
    @classmethod
    def _question(cls, value: str | None) -> str | None:
        if value is not None:
            check_template(value, VARIABLES, "ask")
        return value


class State(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = ""
    instruction: str | None = None
    outputs: list[Output] = Field(default_factory=list)
    transitions: list[Transition] = Field(default_factory=list)
    final: FinalKind | None = None

    @field_validator("instruction")
    @classmethod
    def _instruction(cls, value: str | None) -> str | None:
        if value is not None:
            check_template(value, VARIABLES, "instruction")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> State:
        if self.final is not None:
            if self.outputs or self.transitions:
                raise ValueError("a final state has no outputs and no transitions")
            return self
        kinds = [o.kind for o in self.outputs]
        if "model" in kinds and self.instruction is None:
            raise ValueError("a state with a 'model' output needs an instruction")
        for i, out in enumerate(self.outputs):
            if out.kind == "act" and out.text is None and "model" not in kinds[:i]:
                raise ValueError(
                    "an 'act' output without a fixed action executes the model's action, so a "
                    "'model' output must come before it (or write {act: <action>})"
                )
        return self


class History(BaseModel):
    """Templates of the context history entries (``$trajectory``)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "$output\n"
    action: str = "Action: $action\n"
    observation: str = "Observation: $observation\n"

    @model_validator(mode="after")
    def _templates(self) -> History:
        for name in ("model", "action", "observation"):
            check_template(getattr(self, name), HISTORY_VARIABLES, f"history.{name}")
        return self


class Machine(BaseModel):
    """A StateFlow state machine; ``Machine.model_validate(data)`` checks the whole graph."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    initial: str
    max_turns: int = Field(default=20, ge=1, le=500)
    on_max_turns: str | None = None
    header: str = ""
    action_regex: str | None = DEFAULT_ACTION_REGEX
    stop: list[str] = Field(default_factory=list)
    max_tokens: int | None = Field(default=None, ge=1, le=8192)
    check_prompt: str = DEFAULT_CHECK_PROMPT
    history: History = Field(default_factory=History)
    #: texts for ``$examples``: the first whose rules match the task (none: "")
    examples: list[Examples] = Field(default_factory=list)
    states: dict[str, State] = Field(min_length=1)
    #: a run profile's changes to the machine (``paper``: the reference's rules where the
    #: project's machine differs), deep-merged over it by :meth:`for_profile`
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    _variants: dict[str, Machine] = PrivateAttr(default_factory=dict)

    @field_validator("header")
    @classmethod
    def _header(cls, value: str) -> str:
        check_template(value, VARIABLES - {"header"}, "header")
        return value

    @field_validator("check_prompt")
    @classmethod
    def _check_prompt(cls, value: str) -> str:
        check_template(value, CHECK_VARIABLES, "check_prompt")
        return value

    @field_validator("action_regex")
    @classmethod
    def _action_regex(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            pattern = re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regex {value!r}: {exc}") from None
        if pattern.groups < 1:
            raise ValueError(f"action_regex {value!r} needs a group: group 1 is the action")
        return value

    @model_validator(mode="after")
    def _graph(self) -> Machine:
        names = set(self.states)
        problems: list[str] = []
        if self.initial not in names:
            problems.append(f"initial state {self.initial!r} is not a state "
                            f"(states: {', '.join(self.states)})")
        unknown = [f"{name} -> {t.to}" for name, state in self.states.items()
                   for t in state.transitions if t.to not in names]
        if unknown:
            problems.append(f"transitions to unknown states: {', '.join(unknown)}")
        finals = [name for name, state in self.states.items() if state.final is not None]
        if not finals:
            problems.append("no final state (mark at least one state final: success or "
                            "final: failure)")
        if self.on_max_turns is not None and self.on_max_turns not in finals:
            problems.append(f"on_max_turns {self.on_max_turns!r} is not a final state "
                            f"(final states: {', '.join(finals) or 'none'})")
        stuck = [name for name, state in self.states.items()
                 if state.final is None and not state.transitions]
        if stuck:
            problems.append(f"states with no way out (not final and no transitions): "
                            f"{', '.join(stuck)}")
        if self.initial in names:
            reach = self.reachable() | ({self.on_max_turns} if self.on_max_turns else set())
            unreachable = [n for n in self.states if n not in reach]
            if unreachable:
                problems.append(f"unreachable states (no path from {self.initial!r}): "
                                f"{', '.join(unreachable)}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _profile_variants(self) -> Machine:
        for name in self.profiles:
            try:
                self.for_profile(name)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(x) for x in e['loc']) or 'machine'}: "
                    f"{str(e['msg']).removeprefix('Value error, ')}" for e in exc.errors())
                raise ValueError(f"profiles.{name}: {problems}") from None
        return self

    def for_profile(self, profile: str) -> Machine:
        """The machine a run under ``profile`` uses: ``profiles[profile]`` deep-merged over
        this one (itself when the profile changes nothing)."""
        overlay = self.profiles.get(profile)
        if not overlay:
            return self
        if profile not in self._variants:
            base = self.model_dump(exclude={"profiles"}, exclude_unset=True)
            self._variants[profile] = Machine.model_validate(deep_merge(base, overlay))
        return self._variants[profile]

    def examples_for(self, task: str) -> str:
        """``$examples`` for a task: the text of the first ``examples`` entry that applies."""
        return next((e.text for e in self.examples if e.applies(task)), "")

    def reachable(self) -> set[str]:
        """The states reachable from the initial state."""
        seen = {self.initial}
        queue = deque([self.initial])
        while queue:
            state = self.states.get(queue.popleft())
            for t in state.transitions if state else []:
                if t.to not in seen and t.to in self.states:
                    seen.add(t.to)
                    queue.append(t.to)
        return seen
