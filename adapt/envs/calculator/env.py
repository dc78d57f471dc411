"""The calculator environment: arithmetic word problems solved with a calculator tool.

Actions (the verb is case-insensitive):

- ``calculator <expression>`` -> the value, e.g. ``calculator (3 * 12) - 5`` -> ``31``; only
  numbers, ``+ - * / // % **``, parentheses and unary minus (see ``arithmetic``); anything else
  gives an ``Error: ...`` observation;
- ``answer <value>`` -> ``Correct answer.`` with reward 1 and ``done`` when the value equals the
  gold answer within 1e-6 (units, ``$`` and thousands separators are ignored: ``answer $1,200``
  is 1200); otherwise ``Incorrect answer.`` (not done: the agent may try again).

Verification (:mod:`adapt.envs.verdicts`): the question is decided by the answers given --
confirmed once a correct answer was submitted, refuted otherwise (a wrong answer, or none yet), so
a task never ends ``succeeded`` with reward 0 because a wrong answer did not end the episode.
Other (sub-)goals are ``unknown``.

Tool calls are independent of each other, so the environment says ``concurrent_actions = True``
and offers an async ``astep`` (what the PASS agent uses to run a batch of actions at once).
"""

from __future__ import annotations

import asyncio
import re
from typing import ClassVar

from pydantic import BaseModel

from adapt.envs.base import BaseEnvironment, StepResult
from adapt.envs.calculator.arithmetic import CalculationError, evaluate, format_number, normalize
from adapt.envs.calculator.config import CalculatorConfig
from adapt.envs.calculator.problems import PROBLEMS, Problem
from adapt.envs.calculator.tools import TOOLS
from adapt.envs.tools import ToolActions
from adapt.envs.verdicts import UNKNOWN, Verification, same_goal
from adapt.errors import UserError

TOLERANCE = 1e-6
CORRECT = "Correct answer."
INCORRECT = "Incorrect answer."
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_FAILURES = ("Error:", INCORRECT, "Unknown action")


def parse_answer(text: str) -> float | None:
    """The number in an answer: the whole text if it is arithmetic (``3/4``), else the first
    number in it (``$1,200 dollars`` -> 1200); ``None`` when there is none."""
    try:
        return float(evaluate(text))
    except CalculationError:
        pass
    match = _NUMBER.search(normalize(text).replace("$", ""))
    return float(match.group(0)) if match else None


class Calculator(ToolActions, BaseEnvironment):
    """Arithmetic word problems with a calculator tool (for tool-using agents such as PASS)."""

    name: ClassVar[str] = "calculator"
    description: ClassVar[str] = (
        "Solve an arithmetic word problem: compute with the calculator tool and submit the "
        "final number with answer (reward 1 when it is correct)."
    )
    config_model: ClassVar[type[BaseModel]] = CalculatorConfig
    default_max_steps: ClassVar[int] = 12
    action_grammar: ClassVar[str] = (
        "calculator <expression>  (evaluate arithmetic: numbers, + - * / // % **, parentheses; "
        "e.g. calculator (3 * 12) - 5)\n"
        "answer <number>  (submit the final answer, e.g. answer 31)"
    )
    prompt_package: ClassVar[str | None] = "adapt.envs.calculator"
    #: the same two actions as tools (``adapt.envs.calculator.tools``)
    action_tools = TOOLS
    #: the action that submits a final answer (see docs/agent-library.md)
    answer_action: ClassVar[str | None] = "answer"
    #: calculator calls do not depend on each other: a batch may run at once
    concurrent_actions: ClassVar[bool] = True

    def __init__(self) -> None:
        self._problem: Problem | None = None
        self._history: list[str] = []
        #: the answers submitted since reset, as written, and whether one was correct
        self._answers: list[str] = []
        self._solved = False

    # -- episode -------------------------------------------------------------------------------
    def start(self, cfg: CalculatorConfig) -> str:
        """Start an episode from a validated config (``reset(**config)`` validates first)."""
        if cfg.question is not None and cfg.answer is not None:
            self._problem = Problem(cfg.question.strip(), cfg.answer)
        elif cfg.seed is not None:
            self._problem = PROBLEMS[cfg.seed % len(PROBLEMS)]
        else:
            self._problem = PROBLEMS[cfg.index or 0]
        self._history = []
        self._answers = []
        self._solved = False
        return self.task_observation(self._problem.question)

    def step(self, action: str) -> StepResult:
        problem = self._require_problem()
        verb, _, argument = action.strip().partition(" ")
        verb = verb.lower().rstrip(":")
        argument = argument.strip()
        if verb == "calculator":
            try:
                value = format_number(evaluate(argument))
            except CalculationError as exc:
                return StepResult(f"Error: {exc}.")
            self._history.append(f"{normalize(argument)} = {value}")
            return StepResult(value)
        if verb == "answer":
            given = parse_answer(argument)
            self._answers.append(argument)
            if given is not None and abs(given - problem.answer) <= TOLERANCE:
                self._solved = True
                return StepResult(CORRECT, 1.0, True, {"success": True})
            if given is None:
                return StepResult(f"{INCORRECT} (write a number, e.g. answer 42)")
            return StepResult(INCORRECT)
        shown = action.strip()[:40]
        return StepResult(f"Unknown action {shown!r}. Use: calculator <expression> | "
                          "answer <number>")

    async def astep(self, action: str) -> StepResult:
        """``step`` as a coroutine (the calculator does no I/O; this lets other tasks run)."""
        await asyncio.sleep(0)
        return self.step(action)

    # -- protocol ------------------------------------------------------------------------------
    @property
    def goal(self) -> str:
        return "" if self._problem is None else self._problem.question

    def task_observation(self, goal: str) -> str:
        return goal

    def salient_state(self) -> str | None:
        if not self._history:
            return None
        return "Calculations so far: " + "; ".join(self._history[-10:])

    def is_failure(self, observation: str) -> bool:
        return observation.startswith(_FAILURES)

    # -- verification (adapt.envs.verdicts) ------------------------------------------------
    def verification_mark(self) -> object:
        return None

    def verify(self, goal: str, *, since: object | None = None) -> Verification:
        """The question itself: confirmed when a correct answer was submitted, refuted when
        none was (a wrong answer, or no answer yet: the reward comes only from a correct
        one). Any other goal (a sub-goal such as ``compute 3 * 12``) is ``unknown``."""
        problem = self._require_problem()
        if not same_goal(goal, problem.question):
            return UNKNOWN
        if self._solved:
            return Verification("confirmed", "a correct answer was submitted (reward 1)")
        if not self._answers:
            return Verification("refuted", "no answer was submitted")
        return Verification("refuted", f"the answer submitted ({self._answers[-1][:40]}) "
                                       "is not correct")

    def _require_problem(self) -> Problem:
        if self._problem is None:
            raise UserError("calculator: call reset(index=...) or reset(seed=...) before step()")
        return self._problem
