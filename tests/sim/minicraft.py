"""A tiny hand-written TextCraft-like game with the real game's observation strings.

Used until (and alongside) the real ``adapt.envs.textcraft`` environment.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from adapt.llm.base import ChatRequest
from adapt.sim.prompt_parse import CraftCommand, parse_craft

DEMOS = """You are a crafting agent. Use the crafting commands to reach the goal.
Actions: get <n> <item>, craft <n> <item> using <n> <item>, ..., inventory, think: ...
Say "Task completed!" when done and "Task failed!" if you cannot do it.

Crafting commands:
craft 3 dark oak sign using 6 dark oak planks, 1 stick
craft 4 dark oak planks using 1 dark oak logs
craft 4 stick using 2 planks
Goal: craft dark oak sign.
> get 2 dark oak logs
Got 2 dark oak logs
> craft 4 dark oak planks using 1 dark oak logs
Crafted 4 minecraft:dark_oak_planks
> craft 4 dark oak planks using 1 dark oak logs
Crafted 4 minecraft:dark_oak_planks
> get 1 stick
Got 1 stick
> craft 3 dark oak sign using 6 dark oak planks, 1 stick
Crafted 3 minecraft:dark_oak_sign
> think: I have the dark oak sign. Task completed!
OK.

Here is a different goal with different craft commands."""


def build_prompt(
    task_observation: str,
    context: str = "",
    trajectory: list[tuple[str, str]] | None = None,
    demos: str = DEMOS,
    executor: bool = True,
) -> str:
    """``demos + "\\n\\n" + task_obs + "\\n" + context + "\\n"`` (+ trajectory + ``> ``)."""
    prompt = demos + "\n\n" + task_observation + "\n" + context + "\n"
    if not executor:
        return prompt
    for action, observation in trajectory or []:
        prompt += f"> {action}\n{observation}\n"
    return prompt + "> "


def inventory_line(inventory: dict[str, int]) -> str:
    if not inventory:
        return "Inventory: You are not carrying anything."
    return "Inventory: " + "".join(f"[{k}] ({v}) " for k, v in inventory.items())


@dataclass
class MiniCraft:
    commands: list[str]
    goal: str
    categories: dict[str, set[str]] = field(default_factory=dict)
    inventory: Counter[str] = field(default_factory=Counter)
    done: bool = False

    def __post_init__(self) -> None:
        self.recipes: list[CraftCommand] = []
        for line in self.commands:
            command = parse_craft(line)
            assert command is not None, line
            self.recipes.append(command)
        self.items = {r.item for r in self.recipes} | {
            i.item for r in self.recipes for i in r.ingredients
        }
        for members in self.categories.values():
            self.items |= members

    @property
    def target(self) -> str:
        return re.sub(r"^craft\s+(\d+\s+)?", "", self.goal)

    def task_observation(self, goal: str | None = None) -> str:
        return "Crafting commands:\n" + "\n".join(self.commands) + f"\n\nGoal: {goal or self.goal}."

    def context(self) -> str:
        return inventory_line(dict(self.inventory))

    def _matches(self, wanted: str, given: str) -> bool:
        return wanted == given or given in self.categories.get(wanted, set())

    def step(self, action: str) -> tuple[str, float]:
        action = action.strip()
        if action.startswith("think:"):
            return "OK.", 0.0
        if action == "inventory":
            return inventory_line({k: v for k, v in self.inventory.items() if v > 0}), 0.0
        if match := re.fullmatch(r"get (\d+) (.+)", action):
            item = match.group(2)
            craftable = any(r.item == item for r in self.recipes)
            if item not in self.items or craftable or item in self.categories:
                return f"Could not find {item}", 0.0
            self.inventory[item] += int(match.group(1))
            return f"Got {match.group(1)} {item}", 0.0
        if action.startswith("craft ") and " using " in action:
            for part in action.split(" using ", 1)[1].split(","):
                if not re.fullmatch(r"\d+ .+", part.strip()):
                    return f"Wrong item format: {part.strip()}", 0.0
            craft = parse_craft(action)
            assert craft is not None
            item_id = "minecraft:" + craft.item.replace(" ", "_")
            if any(self.inventory[i.item] < i.count for i in craft.ingredients):
                return f"Could not find enough items to craft {item_id}", 0.0
            for recipe in self.recipes:
                if recipe.item != craft.item or len(recipe.ingredients) != len(craft.ingredients):
                    continue
                if all(
                    any(
                        self._matches(r.item, g.item) and r.count == g.count
                        for g in craft.ingredients
                    )
                    for r in recipe.ingredients
                ):
                    for ingredient in craft.ingredients:
                        self.inventory[ingredient.item] -= ingredient.count
                    self.inventory[recipe.item] += recipe.count
                    reward = 1.0 if recipe.item == self.target else 0.0
                    self.done = self.done or reward > 0
                    return f"Crafted {recipe.count} {item_id}", reward
            return f"Could not find a valid recipe for {craft.item}", 0.0
        return f"Could not execute {action}", 0.0


BEEHIVE = [
    "craft 1 beehive using 6 planks, 3 honeycomb",
    "craft 4 oak planks using 1 oak logs",
    "craft 4 birch planks using 1 birch logs",
    "craft 1 bee nest using 3 honeycomb",
    "craft 4 stick using 2 planks",
]
PLANKS = {"planks": {"oak planks", "birch planks"}}


@dataclass
class Episode:
    steps: list[tuple[str, str]]
    reward: float

    @property
    def last(self) -> str:
        return self.steps[-1][0] if self.steps else ""

    @property
    def completed(self) -> bool:
        return "Task completed!" in self.last

    @property
    def failed(self) -> bool:
        return "Task failed!" in self.last


def play(
    model: object,
    task_observation: str,
    step: Callable[[str], tuple[str, float]],
    context: str = "",
    max_steps: int = 20,
    demos: str = DEMOS,
) -> Episode:
    """Run the model as executor: prompt -> one line -> env step -> observation -> prompt..."""
    from adapt.sim import SimTextCraftModel

    assert isinstance(model, SimTextCraftModel)
    steps: list[tuple[str, str]] = []
    reward = 0.0
    for _ in range(max_steps):
        prompt = build_prompt(task_observation, context, steps, demos=demos)
        response = asyncio.run(model.complete(ChatRequest(prompt=prompt, stop=["\n"])))
        line = response.text
        if line.startswith("think:"):
            observation = "OK."
        else:
            observation, got = step(line.lstrip("> ").strip())
            reward = max(reward, got)
        steps.append((line, observation))
        if "Task completed!" in line or "Task failed!" in line:
            break
    return Episode(steps, reward)


BOOKS = [
    "craft 1 bookshelf using 6 planks, 3 book",
    "craft 1 book using 3 paper, 1 leather",
    "craft 3 paper using 3 sugar cane",
    "craft 4 oak planks using 1 oak logs",
    "craft 4 spruce planks using 1 spruce logs",
    "craft 1 lectern using 4 oak slab, 1 bookshelf",
    "craft 6 oak slab using 3 oak planks",
    "craft 4 stick using 2 planks",
    "craft 1 item frame using 8 stick, 1 leather",
]
#: goal -> recipe depth in BOOKS
BOOKS_DEPTHS = {
    "craft oak planks": 1,
    "craft paper": 1,
    "craft book": 2,
    "craft 4 stick": 2,
    "craft oak slab": 2,
    "craft item frame": 3,
    "craft bookshelf": 3,
    "craft lectern": 4,
}
