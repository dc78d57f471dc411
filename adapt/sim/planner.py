"""The simulated planner: a one-recipe-level plan in the paper's format (Appendix G), and for
the plan-and-execute baseline one detailed plan over every level (``write_detailed_plan``).

``# Think:`` lines, ``Step N: fetch <amount> <ingredient>`` for every missing ingredient, one
``Step N: craft <k> <X> using ...`` per craft needed, and ``Execution Order: (Step 1 AND ...)``.
Counts: the goal needs N of X minus what the believed (context) inventory holds; a recipe yields
k per craft, so crafts = ceil(N / k); each ingredient is needed n_i x crafts minus what is held.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from adapt.sim.crafting import (
    Action,
    CraftingBook,
    PlanImpossible,
    plan_acquisition,
    plan_craft_once,
)
from adapt.sim.executor import Draws, Knobs
from adapt.sim.prompt_parse import Goal, Ingredient, TaskPrompt


@dataclass(frozen=True, slots=True)
class PlanText:
    text: str
    kind: str  # plan, mistake:<k>, format:<k>
    malformed: bool = False


@dataclass(slots=True)
class _Draft:
    thoughts: list[tuple[int, str]]  # (insert before step index, thought)
    steps: list[str]
    kind: str = "plan"


def _ingredient_list(ingredients: tuple[Ingredient, ...]) -> str:
    return ", ".join(i.render() for i in ingredients)


def _draft(
    goal: Goal, inventory: Counter[str], book: CraftingBook, draws: Draws, err: bool
) -> _Draft:
    item = book.resolve(book.canonical(goal.item), inventory)
    recipe = book.recipe_for(item)
    given = goal.ingredients
    if recipe is None and given is None:
        thought = (
            f"My target is {goal.count} {item}. No crafting command makes {item}, so I can "
            "fetch it directly."
        )
        return _Draft([(0, thought)], [f"fetch {goal.count} {item}"])
    if given is not None:
        # "craft k X using ...": perform that one craft
        spec = tuple(Ingredient(i.count, book.canonical(i.item)) for i in given)
        yield_count = recipe.count if recipe is not None else goal.count
        crafts = 1
        command_text = f"craft {yield_count} {item} using {_ingredient_list(spec)}"
    else:
        if recipe is None:
            raise ValueError(f"no recipe makes {item!r}")
        spec = recipe.ingredients
        yield_count = recipe.count
        need = max(goal.count - inventory[item], 0)
        crafts = math.ceil(need / yield_count)
        command_text = recipe.render()
    if crafts == 0:
        thought = f"I already have {inventory[item]} {item}, which is enough."
        return _Draft([(0, thought)], [f"fetch {goal.count} {item}"])
    ingredients = book.resolve_ingredients(spec, inventory)
    kind = "plan"
    mistakes: list[str] = []
    if err:
        if crafts > 1:
            mistakes += ["not_multiplied", "one_craft_short"]
        if any(book.is_category(i.item) for i in spec):
            mistakes.append("category_fetch")
    mistake = (
        mistakes[min(int(draws.error_kind * len(mistakes)), len(mistakes) - 1)]
        if mistakes
        else None
    )
    steps: list[str] = []
    thoughts: list[tuple[int, str]] = []
    have = f" I have {inventory[item]} {item} already." if inventory[item] and given is None else ""
    thoughts.append(
        (
            0,
            f"My target is {goal.count} {item}. From the list of crafting commands, the command "
            f"that generates my target is: {command_text}.{have} It gives {yield_count} per "
            f"craft, so I need to use it {crafts} time{'s' if crafts > 1 else ''}. My ingredients "
            f"are: {_ingredient_list(ingredients)}. I should first get all the ingredients and "
            "then use the crafting command.",
        )
    )
    times = 1 if mistake == "not_multiplied" else crafts
    for ingredient, original in zip(ingredients, _originals(spec, ingredients), strict=True):
        # "fetch N X" means "hold at least N X" to the executor, so write the total needed
        # and leave out ingredients that are already held in full.
        amount = ingredient.count * times
        if inventory[ingredient.item] >= amount:
            continue
        name = ingredient.item
        if mistake == "category_fetch" and original is not None:
            name = original
        steps.append(f"fetch {amount} {name}")
    crafted_steps = crafts - 1 if mistake == "one_craft_short" else crafts
    thoughts.append(
        (len(steps), f"Now that I have collected the input ingredients, I can craft {item}.")
    )
    for _ in range(crafted_steps):
        steps.append(f"craft {yield_count} {item} using {_ingredient_list(ingredients)}")
    if mistake is not None:
        kind = f"mistake:{mistake}"
    return _Draft(thoughts, steps, kind)


def _originals(spec: tuple[Ingredient, ...], resolved: tuple[Ingredient, ...]) -> list[str | None]:
    """For each resolved ingredient, the category name it stands for (or None)."""
    originals: list[str | None] = []
    for ingredient in resolved:
        category = next(
            (
                s.item
                for s in spec
                if s.item != ingredient.item and ingredient.item.endswith(" " + s.item)
            ),
            None,
        )
        originals.append(category)
    return originals


def write_plan(task: TaskPrompt, knobs: Knobs, draws: Draws) -> PlanText:
    """The planner's completion for ``task``."""
    goal = task.goal
    if goal is None:
        return PlanText("# Think: I cannot find a goal I understand, so I cannot plan.", "no_goal")
    book = CraftingBook(task.commands)
    inventory: Counter[str] = Counter()
    for name, count in (task.context_inventory or {}).items():
        inventory[book.canonical(name)] += count
    draft = _draft(goal, inventory, book, draws, draws.error < knobs.error_rate)
    malformed = draws.format_error < knobs.format_error_rate
    unlabeled = -1
    kind = draft.kind
    if malformed:
        if draws.format_kind < 0.5 or len(draft.steps) < 2:
            kind = "format:no_execution_order"
        else:
            unlabeled = min(int(draws.detail * len(draft.steps)), len(draft.steps) - 1)
            kind = "format:unlabeled_step"
    lines: list[str] = []
    thoughts = sorted(draft.thoughts, key=lambda t: t[0])
    for index, step in enumerate(draft.steps):
        lines += [f"# Think: {t}" for at, t in thoughts if at == index]
        lines.append(step if index == unlabeled else f"Step {index + 1}: {step}")
    lines += [f"# Think: {t}" for at, t in thoughts if at >= len(draft.steps)]
    if kind != "format:no_execution_order":
        lines.append(
            "# Think: To succeed, I need to perform all these steps, one after the other. "
            'So I need to use the "AND" operator.'
        )
        order = " AND ".join(f"Step {i + 1}" for i in range(len(draft.steps)))
        lines.append(f"Execution Order: ({order})")
    return PlanText("\n".join(lines), kind, malformed)


# -- plan-and-execute: one detailed plan over every recipe level ------------------------------
def _detailed_steps(goal: Goal, inventory: Counter[str], book: CraftingBook) -> list[Action]:
    """Every action from the base fetches up to the goal craft (dependency order)."""
    if goal.kind == "craft" and goal.ingredients is not None:
        item = book.canonical(goal.item)
        recipe = book.recipe_for(item)
        spec = tuple(Ingredient(i.count, book.canonical(i.item)) for i in goal.ingredients)
        count = recipe.count if recipe is not None else goal.count
        craft = Action("craft", item, count, book.resolve_ingredients(spec, inventory))
        return plan_craft_once(book, craft, inventory).actions
    item = book.resolve(book.canonical(goal.item), inventory)
    return plan_acquisition(book, item, goal.count, inventory).actions


def _detailed_mistake(
    actions: list[Action], goal_item: str, draws: Draws
) -> tuple[list[Action], str] | None:
    """A realistic slip in a long plan: a forgotten intermediate craft, or a base amount
    written for one craft instead of all of them. None if no slip applies."""
    options: list[tuple[list[Action], str]] = []
    crafts = [i for i, a in enumerate(actions) if a.kind == "craft" and a.item != goal_item]
    if crafts:
        drop = crafts[min(int(draws.detail * len(crafts)), len(crafts) - 1)]
        options.append(([a for i, a in enumerate(actions) if i != drop], "missing_craft"))
    for index, action in enumerate(actions):
        if action.kind != "get":
            continue
        per_craft = next(
            (
                ing.count
                for a in actions
                if a.kind == "craft"
                for ing in a.ingredients
                if ing.item == action.item
            ),
            action.count,
        )
        if per_craft < action.count:
            short = [*actions]
            short[index] = Action("get", action.item, per_craft, category=action.category)
            options.append((short, "not_multiplied"))
            break
    if not options:
        return None
    return options[min(int(draws.error_kind * len(options)), len(options) - 1)]


def _step_text(action: Action) -> str:
    if action.kind == "get":
        return f"fetch {action.count} {action.item}"
    return action.render()


def write_detailed_plan(task: TaskPrompt, knobs: Knobs, draws: Draws) -> PlanText:
    """The plan-and-execute planner's completion: every recipe level in one plan.

    Base fetches first (exact totals), then the crafts bottom-up (one step per craft), the goal
    craft last, joined with AND. ``error_rate`` is per recipe level (a plan over 3 levels slips
    with chance 1 - (1 - e)^3); ``format_error_rate`` as for the one-level planner.
    """
    goal = task.goal
    if goal is None:
        return PlanText("# Think: I cannot find a goal I understand, so I cannot plan.", "no_goal")
    book = CraftingBook(task.commands)
    inventory: Counter[str] = Counter()
    for name, count in (task.context_inventory or {}).items():
        inventory[book.canonical(name)] += count
    try:
        actions = _detailed_steps(goal, inventory, book)
    except PlanImpossible as exc:
        return PlanText(f"# Think: {exc}, so I cannot plan {goal.text}.", "impossible")
    if not actions:
        actions = [Action("get", book.canonical(goal.item), goal.count)]
    goal_item = actions[-1].item
    levels = max(1, len({a.item for a in actions if a.kind == "craft"}))
    kind = "plan"
    if draws.error < 1 - (1 - knobs.error_rate) ** levels:
        slip = _detailed_mistake(actions, goal_item, draws)
        if slip is not None:
            actions, mistake = slip
            kind = f"mistake:{mistake}"
    steps = [_step_text(a) for a in actions]
    gets = [a for a in actions if a.kind == "get"]
    made = [a.item for a in actions if a.kind == "craft" and a.item != goal_item]
    intermediates = list(dict.fromkeys(made))
    thoughts: list[tuple[int, str]] = [
        (
            0,
            f"My goal is: {goal.text}. Working down the crafting commands, the base materials "
            f"are {', '.join(f'{a.count} {a.item}' for a in gets) or 'already held'}"
            + (
                f" and the intermediate items are {', '.join(intermediates)}"
                if intermediates
                else ""
            )
            + ". I fetch every base material first, then craft from the bottom up, with exact "
            "counts, and craft the goal last.",
        )
    ]
    if gets and len(gets) < len(steps):
        thoughts.append((len(gets), "With the base materials held I can craft the items."))
    malformed = draws.format_error < knobs.format_error_rate
    unlabeled = -1
    if malformed:
        if draws.format_kind < 0.5 or len(steps) < 2:
            kind = "format:no_execution_order"
        else:
            unlabeled = min(int(draws.detail * len(steps)), len(steps) - 1)
            kind = "format:unlabeled_step"
    lines: list[str] = []
    for index, step in enumerate(steps):
        lines += [f"# Think: {t}" for at, t in thoughts if at == index]
        lines.append(step if index == unlabeled else f"Step {index + 1}: {step}")
    if kind != "format:no_execution_order":
        lines.append("# Think: Every step is needed, one after the other, so I join them with AND.")
        order = " AND ".join(f"Step {i + 1}" for i in range(len(steps)))
        lines.append(f"Execution Order: ({order})")
    return PlanText("\n".join(lines), kind, malformed)
