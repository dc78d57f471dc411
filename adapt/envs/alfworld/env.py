"""The ALFWorld environment: household tasks on ALFWorld's own engine (textworld + PDDL).

Observations are ALFWorld's, word for word: the reset observation is the room and the task
(``You are in the middle of a room. Looking quickly around you, you see a cabinet 1, ...`` and
``Your task is to: put a clean mug in coffeemachine.``; the ``-= Welcome to TextWorld, ALFRED!
=-`` banner is left out, as ReAct's and ADaPT's prompts do); a command the game cannot do
gives ``Nothing happens.``. Reward 1 and ``done`` when the goal holds.

Commands: ALFWorld's (``go to X``, ``open X``, ``close X``, ``take X from Y``, ``move X to Y``,
``clean X with Y``, ``heat X with Y``, ``cool X with Y``, ``use X``, ``examine X``, ``look``,
``inventory``); ``put X in/on Y`` works too (see :mod:`adapt.envs.alfworld.commands`).

Roll-back (``rollback=True`` in the config, profile ``paper``): the environment keeps the log of
the commands sent to the game; ``rollback(mark)`` resets the game and replays the log up to the
mark, so a failed sub-task leaves nothing behind, as in ADaPT's ALFWorld runs (which reset and
replay the actions of the successful sub-tasks before each sub-task).

Context propagation (ADaPT's ALFWorld runs): ``salient_state`` is the last action that changed
something and its observation (``> take mug 1 from countertop 2`` / ``You pick up the mug 1
from the countertop 2.``), plus where the agent is and what it holds.
"""

from __future__ import annotations

import logging
from string import Template
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from adapt.envs.alfworld.commands import (
    DEFAULT_CUTOFF,
    bleu_match,
    first_sentence,
    near_miss,
    normalise,
)
from adapt.envs.alfworld.config import ALFWorldConfig
from adapt.envs.alfworld.game import Game, task_sentence
from adapt.envs.alfworld.games import resolve
from adapt.envs.alfworld.tools import TOOLS
from adapt.envs.alfworld.verify import check_go, check_take, game_kinds
from adapt.envs.base import BaseEnvironment, StepResult, package_text
from adapt.envs.tools import ToolActions
from adapt.envs.verdicts import UNKNOWN, Verification, same_goal
from adapt.errors import InvalidConfig, UserError

if TYPE_CHECKING:
    from adapt.envs.alfworld.engine import Household

logger = logging.getLogger(__name__)

#: command verbs that change the household (the others only look)
_ACTING = ("go to ", "open ", "close ", "take ", "move ", "clean ", "heat ", "cool ", "use ",
           "slice ")
_TASK_PREFIX = "Your task is to: "
#: the observation of a command the game cannot do, and the banner of every intro (ALFWorld's)
NOTHING_HAPPENS = "Nothing happens."
WELCOME = "-= Welcome to TextWorld, ALFRED! =-"


class ALFWorld(ToolActions, BaseEnvironment):
    """ALFWorld (Shridhar et al., 2021) on the real ALFWorld engine, offline; its commands are
    also tools (``adapt.envs.alfworld.tools``)."""

    name: ClassVar[str] = "alfworld"
    description: ClassVar[str] = (
        "ALFWorld household tasks on ALFWorld's own engine (textworld + PDDL): find, take, "
        "clean, heat, cool and place objects, or look at one under a lamp. Games are generated "
        "offline from ALFWorld's layouts (seed, or split dev/test), or official ALFWorld game "
        "files (split valid_unseen with ALFWORLD_DATA, or game_path). Reward 1 when the goal holds."
    )
    config_model: ClassVar[type[BaseModel]] = ALFWorldConfig
    default_max_steps: ClassVar[int] = 20
    action_grammar: ClassVar[str] = (
        "go to <receptacle>  (e.g. go to countertop 1)\n"
        "open <receptacle> / close <receptacle>\n"
        "take <object> from <receptacle>\n"
        "move <object> to <receptacle>  (put <object> in/on <receptacle> also works)\n"
        "clean <object> with <sinkbasin> / heat <object> with <microwave> / "
        "cool <object> with <fridge>\n"
        "use <lamp>  (turn a desklamp or floorlamp on)\n"
        "examine <object or receptacle> / look / inventory"
    )
    prompt_package: ClassVar[str | None] = "adapt.envs.alfworld"
    action_tools = TOOLS
    #: the kinds each prompt set (config ``prompts``) has under ``prompts/<set>/``
    prompt_sets: ClassVar[dict[str, frozenset[str]]] = {
        "paper": frozenset({"executor", "planner", "stateact"})}
    state_fields: ClassVar[tuple[str, ...]] = ("current location", "current inventory")
    #: reward 1 means the goal holds (trials count it, not the executor's claim)
    success_reward: ClassVar[float | None] = 1.0
    #: profile ``paper``: the ADaPT paper's ALFWorld settings and its code's (token limits, the
    #: planner's blank-line stop, roll-back of failed sub-tasks); the StateAct and StateFlow
    #: code's for those executors
    paper_profile: ClassVar[dict[str, dict[str, Any]]] = {
        "run": {"d_max": 3},
        "executor": {"max_steps": 20, "patience": 5, "max_tokens": 100},
        "planner": {"max_tokens": 400, "stop": ["\n\n"], "propagate_context": False},
        "environment_config": {"rollback": True, "prompts": "paper"},
        # the ReAct baseline: the paper's 60 iterations, whatever d_max; StateAct as its code
        # (alfworld_run.py): 100 model calls, a stop after 5 repetitions of the same output,
        # no patience rule and no self-assessed ending (a step is several lines); StateFlow's
        # group chat of 100 messages
        "by_executor": {"react": {"run": {"react_steps": 60}},
                        "stateact": {"max_steps": 100, "max_tokens": 384, "patience": None,
                                     "self_assessment": "off", "repeat_limit": 5,
                                     "run": {"react_steps": 100}},
                        "stateflow": {"max_steps": 50, "run": {"react_steps": 50},
                                      "environment_config": {"near_miss": "bleu"}}},
    }

    def __init__(self, *, cache: bool = True) -> None:
        """``cache=False`` turns off the engine's caches (same behaviour, slower)."""
        from adapt.envs.alfworld.engine import Household  # textworld: imported on first use

        self._engine: Household = Household(cache=cache)
        self._game: Game | None = None
        self._config: ALFWorldConfig | None = None
        self._room = ""
        self._goal = ""
        self._last: tuple[str, str] | None = None
        #: the game's object and receptacle kinds (what a sub-goal may name)
        self._kinds: frozenset[str] = frozenset()
        #: the commands sent to the game since reset (what ``rollback`` replays)
        self._log: list[str] = []

    # -- episode -------------------------------------------------------------------------------
    def start(self, cfg: ALFWorldConfig) -> str:
        """Start an episode from a validated config (``reset(**config)`` validates first)."""
        game = resolve(cfg)
        self._engine.load(game.document())
        intro = self._engine.reset()
        observation = intro.replace(WELCOME, "", 1).strip()
        self._game, self._config = game, cfg
        self._kinds = game_kinds(game.pddl_problem)
        self._goal = task_sentence(observation)
        room, sep, _ = observation.partition(_TASK_PREFIX)
        self._room = room.strip() if sep else observation
        self._last = None
        self._log = []
        if not self._goal:
            raise InvalidConfig(f"alfworld: the game {game.source} states no task "
                                "('Your task is to: ...' is missing from its intro)")
        return observation

    def step(self, action: str) -> StepResult:
        if self._game is None or self._config is None:
            raise UserError("alfworld: call reset(seed=...) (or split=/game_path=) before step()")
        command = normalise(action)
        if command.startswith("think:"):
            return StepResult("OK.")
        info: dict[str, Any] = {}
        if self._config.near_miss == "bleu":  # StateFlow's code: every action, cut at a "."
            command = normalise(first_sentence(action))
            mapped = bleu_match(command, self._engine.admissible_commands)
            if mapped is not None:
                info["mapped_to"] = mapped
                command = mapped
        elif self._config.near_miss:
            mapped = near_miss(command, self._engine.admissible_commands, DEFAULT_CUTOFF)
            if mapped is not None:
                info["mapped_to"] = mapped
                command = mapped
        observation, won = self._engine.step(command)
        self._log.append(command)
        if observation != NOTHING_HAPPENS and command.startswith(_ACTING):
            self._last = (command, observation)
        if won:
            info["success"] = True
        return StepResult(observation, 1.0 if won else 0.0, won, info)

    # -- protocol ------------------------------------------------------------------------------
    @property
    def goal(self) -> str:
        return self._goal

    def salient_state(self) -> str | None:
        if self._last is None:
            return None
        action, observation = self._last
        where = self._engine.location() or "the middle of the room"
        held = ", ".join(self._engine.inventory()) or "nothing"
        return (f"Context from earlier sub-tasks:\n> {action}\n{observation}\n"
                f"current location: {where}\ncurrent inventory: {held}")

    def task_observation(self, goal: str) -> str:
        if self._game is None:
            raise UserError("alfworld: call reset(...) before task_observation()")
        text = " ".join(goal.split()).rstrip(".")
        return f"{self._room}\n\n{_TASK_PREFIX}{text}."

    def is_failure(self, observation: str) -> bool:
        return observation.strip() == NOTHING_HAPPENS

    def prompt_variables(self) -> dict[str, str]:
        """``$room``: the room as the reset observation describes it (the paper planner's
        query is the room, then ``Goal: <goal>.``)."""
        return {"room": self._room}

    def current_prompt_set(self) -> str | None:
        return None if self._config is None else self._config.prompts

    def prompt_template(self, kind: str) -> str:
        """The default or the chosen set's template (``prompt_sets``); the paper StateAct
        template shows the two demonstrations of the game's task type."""
        text = super().prompt_template(kind)
        if kind == "stateact" and kind in self.prompt_sets.get(self.current_prompt_set() or "", ()):
            text = Template(text).safe_substitute(examples=self._stateact_examples())
        return text

    def _stateact_examples(self) -> str:
        """The paper StateAct set's two demonstrations of this game's task type, as the
        StateAct code picks them by the game file's name."""
        task_type = self._require_game().task_type
        text = package_text("adapt.envs.alfworld", "prompts", "paper", "stateact",
                            f"{task_type}.txt") if task_type else None
        if text is None:
            raise UserError(
                f"alfworld: the paper StateAct prompt shows two demonstrations of the game's "
                f"task type, and the type of {self._require_game().source} is unknown (no "
                "traj_data.json and no task-type folder name such as pick_heat_then_place_in_"
                "recep-...); give the game a known type or use prompts 'default'")
        return text.rstrip("\n")

    def rolls_back(self) -> bool:
        return self._config is not None and self._config.rollback

    def checkpoint(self) -> object:
        return (len(self._log), self._last)

    def rollback(self, mark: object) -> None:
        """Reset the game and replay the commands logged before ``mark``."""
        if not isinstance(mark, tuple) or len(mark) != 2:
            raise UserError("alfworld: rollback() takes a mark from checkpoint()")
        length, last = mark
        replay = self._log[:length]
        self._engine.reset()
        for command in replay:
            self._engine.step(command)
        self._log = replay
        self._last = last

    @property
    def actions(self) -> list[str]:
        """The commands sent to the game since reset (after a roll-back, those kept)."""
        return list(self._log)

    def close(self) -> None:
        self._engine.close()

    # -- verification (adapt.envs.verdicts) ------------------------------------------------
    def verification_mark(self) -> object:
        """What the agent holds when a node starts (``another X`` needs a new one)."""
        return tuple(self._engine.inventory()) if self._game is not None else None

    def verify(self, goal: str, *, since: object | None = None) -> Verification:
        """What the household state decides: the task itself (the game's goal conditions, i.e.
        whether it is won); take sub-goals (``find and take a soapbottle``, ``... another
        soapbottle``, ``take the mug 1 from ...``) by what the agent holds and ``go to
        <receptacle>`` by where it stands, read by :mod:`adapt.envs.alfworld.verify`, which
        refutes only what it reads with confidence. Any other sub-goal (clean, heat, put, ...)
        is ``unknown``."""
        if self._game is None:
            raise UserError("alfworld: call reset(...) before verify()")
        if same_goal(goal, self._goal):
            if self._engine.won:
                return Verification("confirmed", "the task's goal conditions hold (reward 1)")
            return Verification("refuted", "the task's goal conditions do not hold yet")
        text = " ".join(goal.lower().split()).rstrip(".")
        start = since if isinstance(since, tuple) else None
        took = check_take(text, self._engine.inventory(), start, self._kinds)
        if took is not None:
            return took
        went = check_go(text, self._engine.location(), self._kinds)
        return UNKNOWN if went is None else went

    # -- queries -------------------------------------------------------------------------------
    def admissible_commands(self) -> list[str]:
        """What can be done now, in ALFWorld's words (``move X to Y``), sorted."""
        return self._engine.admissible_commands

    def walkthrough(self) -> list[str]:
        """The reference solution of the current game (the planner's, for generated games)."""
        return list(self._require_game().walkthrough)

    @property
    def game(self) -> Game:
        """The current game (after ``reset``)."""
        return self._require_game()

    @property
    def task_type(self) -> str | None:
        """``pick``, ``clean``, ``heat``, ``cool``, ``examine``, ``pick_two`` (None: unknown)."""
        return self._require_game().task_type

    def _require_game(self) -> Game:
        if self._game is None:
            raise UserError("alfworld: call reset(...) first")
        return self._game
