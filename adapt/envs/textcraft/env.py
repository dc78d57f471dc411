"""The TextCraft environment: craft Minecraft 1.16.5 items from text commands.

Actions (case and extra spaces do not matter; a final ``.`` is ignored):

- ``get <n> <item>`` -> ``Got <n> <item>``; only for items (or material tags like ``oak logs``)
  without a recipe, else ``Could not find <item>``;
- ``craft <n> <item> using <n> <item>, <n> <item>, ...`` -> ``Crafted <n> minecraft:<id>``;
  the ingredient counts must be exactly a recipe's; the output count is informational (the
  recipe's count is produced); inputs are consumed;
- ``inventory`` (any action starting with it, e.g. ``inventory:``, as in the reference) ->
  ``Inventory: [oak planks] (4) [stick] (1) `` or ``Inventory: You are not carrying anything.``;
- ``think: ...`` -> ``OK.`` (no effect).

Reward 1 and ``done`` when the goal item enters the inventory (in generated games the goal
always has a recipe, so that is when it is crafted).

Category ingredients (``planks``, ``wool``): a craft action must name the concrete member it
uses, held in the inventory (``craft 4 stick using 2 oak planks`` for the command ``craft 4
stick using 2 planks``). Naming the category itself fails with ``Could not find enough items to
craft minecraft:stick``, since a category is never held, as in the paper's implementation.
Material tags (``oak logs``) are fetched and named as such; a held member (``oak log``) works too.

Crafting may use any recipe of the recipe book, plus the commands of an explicit game.
"""

from __future__ import annotations

import logging
import re
from typing import Any, ClassVar

from pydantic import BaseModel

from adapt.envs.base import BaseEnvironment, StepResult
from adapt.envs.textcraft.book import RecipeBook, load_book
from adapt.envs.textcraft.config import TextCraftConfig
from adapt.envs.textcraft.game import Game, explicit_game, game_for_goal, game_for_seed
from adapt.envs.textcraft.grammar import action_grammar, plan_grammar
from adapt.envs.textcraft.recipes import Recipe, canonical, display
from adapt.envs.textcraft.tools import TOOLS
from adapt.envs.textcraft.verify import parse_goal_form, verify_goal
from adapt.envs.tools import ToolActions
from adapt.envs.verdicts import Verification
from adapt.errors import InvalidConfig, UserError

logger = logging.getLogger(__name__)

_GET = re.compile(r"get\s+(\d+)\s+(.+)")
_CRAFT = re.compile(r"craft\s+(.+?)\s+using\s+(.+)")
_AMOUNT = re.compile(r"(\d+)\s+(.+)")
_FAILURE_PREFIXES = ("Could not find", "Could not execute", "Wrong item format:")
EMPTY_INVENTORY = "Inventory: You are not carrying anything."


class TextCraft(ToolActions, BaseEnvironment):
    """TextCraft (ADaPT paper, section 4.1) on real Minecraft 1.16.5 recipes; its actions are
    also tools (``get``, ``craft``, ``inventory``: ``adapt.envs.textcraft.tools``)."""

    name: ClassVar[str] = "textcraft"
    description: ClassVar[str] = (
        "Craft a Minecraft 1.16.5 item from crafting commands: fetch base materials with get, "
        "craft intermediate items and finally the goal item (reward 1 when it is crafted)."
    )
    config_model: ClassVar[type[BaseModel]] = TextCraftConfig
    default_max_steps: ClassVar[int] = 20
    action_grammar: ClassVar[str] = (
        "get <n> <item>  (fetch a base material: an item without a crafting recipe)\n"
        "craft <n> <item> using <n> <item>, <n> <item>, ...  (use a listed crafting command "
        "with its exact ingredient counts; for a category such as planks name the held item, "
        "e.g. oak planks)\n"
        "inventory  (list what you carry)"
    )
    prompt_package: ClassVar[str | None] = "adapt.envs.textcraft"
    action_tools = TOOLS
    #: the kinds each prompt set (config ``prompts``) has under ``prompts/<set>/``; the other
    #: kinds keep the default template
    prompt_sets: ClassVar[dict[str, frozenset[str]]] = {
        "small": frozenset({"executor", "planner", "plan_and_execute"}),
        "paper": frozenset({"executor", "planner"}),
    }
    #: what the StateAct executor tracks each step (``current inventory: [oak planks] (4)``)
    state_fields: ClassVar[tuple[str, ...]] = ("current inventory",)
    #: reward 1 means the goal holds (trials count it, not the executor's claim)
    success_reward: ClassVar[float | None] = 1.0
    #: profile ``paper``: the ADaPT paper's TextCraft settings (20 steps, as the paper; the
    #: authors' code runs 39), the authors' code where the paper is silent (see
    #: docs/reproducing-the-papers.md)
    paper_profile: ClassVar[dict[str, dict[str, Any]]] = {
        "run": {"d_max": 4},  # the paper's TextCraft depth (recipes up to depth 4)
        "executor": {"max_steps": 20, "patience": 8, "max_tokens": 150,
                     "self_assessment": "any_line"},
        "planner": {"max_tokens": 800, "stop": [], "propagate_context": False},
        "environment_config": {"prompts": "paper"},
        # the ReAct baseline: the paper's 60 iterations, whatever d_max;
        # a StateAct step is several lines
        "by_executor": {"react": {"run": {"react_steps": 60}},
                        "stateact": {"max_tokens": 384}},
    }

    def __init__(self) -> None:
        self._book = load_book()
        self._game: Game | None = None
        self._extra: dict[str, tuple[Recipe, ...]] = {}
        self._inventory: dict[str, int] = {}
        #: cumulative production (fetched or crafted) per id, for "gain" goals; never decreases
        self._produced: dict[str, int] = {}
        self._solved = False
        self._prompts = "default"

    # -- episode -------------------------------------------------------------------------------
    def start(self, cfg: TextCraftConfig) -> str:
        """Start an episode from a validated config (``reset(**config)`` validates first)."""
        if cfg.seed is not None:
            game = game_for_seed(self._book, cfg.seed)
        elif cfg.goal is None:  # pragma: no cover - the config model requires seed or goal
            raise InvalidConfig("textcraft: give seed or goal")
        elif cfg.commands is not None:
            game = explicit_game(self._book, cfg.goal, cfg.commands)
        else:
            game = game_for_goal(self._book, cfg.goal)
        extra: dict[str, list[Recipe]] = {}
        for r in game.extra:
            extra.setdefault(r.output, []).append(r)
        self._game = game
        self._extra = {k: tuple(v) for k, v in extra.items()}
        self._inventory = {}
        self._produced = {}
        self._solved = False
        self._prompts = cfg.prompts
        return game.observation()

    def step(self, action: str) -> StepResult:
        game = self._require_game()
        text = " ".join(action.split()).rstrip(".").rstrip()
        low = text.lower()
        if low.startswith("inventory"):  # as the reference: ``inventory:`` works too
            return StepResult(self._inventory_text())
        if low.startswith("think:"):
            return StepResult("OK.")
        m = _GET.fullmatch(low)
        if m is not None:
            observation, added = self._get(int(m.group(1)), m.group(2), text)
        else:
            m = _CRAFT.fullmatch(low)
            if m is None:
                return StepResult(f"Could not execute {text}")
            observation, added = self._craft(m.group(1), m.group(2))
        if added == game.goal:  # the goal entered the inventory
            self._solved = True
            return StepResult(observation, 1.0, True, {"success": True})
        return StepResult(observation)

    # -- actions -------------------------------------------------------------------------------
    def _get(self, n: int, item_text: str, text: str) -> tuple[str, str | None]:
        """Returns the observation and the fetched id (``None`` on failure)."""
        if n < 1:
            return f"Could not execute {text}", None
        name = self._book.resolve(item_text)
        if name is None or not self._book.is_fetchable(name):
            return f"Could not find {item_text}", None
        self._inventory[name] = self._inventory.get(name, 0) + n
        self._produced[name] = self._produced.get(name, 0) + n
        return f"Got {n} {display(name)}", name

    def _craft(self, output_text: str, inputs_text: str) -> tuple[str, str | None]:
        """Returns the observation and the crafted item id (``None`` on failure)."""
        m = _AMOUNT.fullmatch(output_text)
        if m is not None:
            output_text = m.group(2)
        given: list[tuple[str, int]] = []
        for part in inputs_text.split(","):
            part = part.strip()
            am = _AMOUNT.fullmatch(part)
            if am is None:
                return f"Wrong item format: {part}", None
            given.append((self._book.resolve(am.group(2)) or "", int(am.group(1))))
        output = self._book.resolve(output_text)
        totals: dict[str, int] = {}
        for name, n in given:
            totals[name] = totals.get(name, 0) + n
        inventory = self._inventory
        if any(inventory.get(name, 0) < n for name, n in totals.items()):
            shown = output or canonical(output_text)
            return f"Could not find enough items to craft minecraft:{shown}", None
        recipe = None
        if output is not None:
            recipe = self._book.find_recipe(output, given, self._extra.get(output, ()))
        if recipe is None:
            return f"Could not find a valid recipe for {display(output or output_text)}", None
        for name, n in totals.items():
            left = inventory[name] - n
            if left:
                inventory[name] = left
            else:
                del inventory[name]
        inventory[recipe.output] = inventory.get(recipe.output, 0) + recipe.count
        self._produced[recipe.output] = self._produced.get(recipe.output, 0) + recipe.count
        return f"Crafted {recipe.count} minecraft:{recipe.output}", recipe.output

    def _inventory_text(self) -> str:
        if not self._inventory:
            return EMPTY_INVENTORY
        return "Inventory: " + "".join(
            f"[{display(name)}] ({n}) " for name, n in self._inventory.items()
        )

    def _require_game(self) -> Game:
        if self._game is None:
            raise UserError("textcraft: call reset(seed=...) or reset(goal=...) before step()")
        return self._game

    # -- protocol ------------------------------------------------------------------------------
    def current_prompt_set(self) -> str | None:
        """``prompts="small"`` or ``"paper"`` in the config (``prompt_sets``)."""
        return self._prompts

    @property
    def goal(self) -> str:
        return "" if self._game is None else self._game.goal_text

    def salient_state(self) -> str | None:
        return self._inventory_text()

    def task_observation(self, goal: str) -> str:
        return self._require_game().observation(goal)

    def is_failure(self, observation: str) -> bool:
        return observation.startswith(_FAILURE_PREFIXES)

    # -- verification (adapt.envs.verdicts; semantics in adapt.envs.textcraft.verify) -------
    def verification_mark(self) -> object:
        return dict(self._produced)

    def verify(self, goal: str, *, since: object | None = None) -> Verification:
        game = self._require_game()
        start = since if isinstance(since, dict) else None
        return verify_goal(self._book, goal, inventory=self._inventory, produced=self._produced,
                           produced_at_start=start, root_goal=game.goal_text,
                           solved=self._solved)

    def experience_key(self, goal: str) -> str | None:
        """The canonical form of a checkable goal, under which the experience library keeps
        and finds its solutions (``adapt.engine.experience.KeyedGoals``): ``craft beehive``
        and ``craft 1 beehive using 6 planks, 3 honeycomb`` are both ``gain 1 beehive``,
        ``fetch 2 sticks`` is ``hold 2 stick``; ``None`` for a goal TextCraft cannot check."""
        form = parse_goal_form(self._book, goal)
        return None if form is None else f"{form.mode} {form.count} {form.item}"

    # -- constrained decoding (adapt.envs.textcraft.grammar) -----------------------------------
    def decoding_grammar(self, kind: str) -> str | None:
        """A GBNF grammar for a model's output: ``action`` (one action, act-only), ``react``
        (an action or a ``think:`` line) or ``plan`` (a plan of checkable steps); ``None`` for
        other kinds. Validated, cached per game."""
        game = self._require_game()
        if kind in ("action", "react"):
            return action_grammar(self._book, game, thoughts=kind == "react")
        if kind == "plan":
            return plan_grammar(self._book, game)
        return None

    # -- queries -------------------------------------------------------------------------------
    @property
    def book(self) -> RecipeBook:
        """The shared, read-only recipe book."""
        return self._book

    @property
    def game(self) -> Game:
        """The current game (goal and commands); after ``reset``."""
        return self._require_game()

    @property
    def inventory(self) -> dict[str, int]:
        """A copy of the inventory: item (or material tag) id -> count, in insertion order."""
        return dict(self._inventory)

    def recipe_commands(self) -> list[str]:
        """Every crafting command line the recipe book knows, formatted as in games."""
        return self._book.commands()

    def goal_depth(self, item: str) -> int:
        """Recipe depth of an item (``polished granite stairs`` or ``craft ...``): 0 for base
        items. Raises ``InvalidConfig`` for an unknown name."""
        body = item.strip().rstrip(".").strip()
        if body.lower().startswith("craft "):
            body = body[6:]
        name = self._book.resolve(body)
        if name is None:
            raise InvalidConfig(f"textcraft: unknown item {body!r}")
        return self._book.depth(name)
