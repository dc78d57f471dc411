"""The simulated executor's policy: one action line per call, computed from the prompt alone.

Each call re-reads the prompt: it builds the belief (``adapt.sim.belief``), checks whether the
goal is met, reacts to the last failure, re-plans the remaining actions from the believed
inventory and writes the first one. Mistakes are injected by the caller's random draws.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapt.sim.belief import Belief, build_belief
from adapt.sim.crafting import (
    Action,
    CraftingBook,
    Plan,
    PlanImpossible,
    plan_acquisition,
    plan_craft_once,
)
from adapt.sim.prompt_parse import Goal, Ingredient, TaskPrompt

#: the executor gives up after this many failed actions in one run
MAX_FAILURES = 4
#: ... or when its next action already failed this many times
MAX_REPEATS = 2


@dataclass(frozen=True, slots=True)
class Knobs:
    capability: int = 1
    error_rate: float = 0.0
    false_success_rate: float = 0.0
    format_error_rate: float = 0.0


@dataclass(frozen=True, slots=True)
class Draws:
    """Uniform [0, 1) numbers drawn once per call, in a fixed order, so knobs stay independent."""

    false_success: float
    error: float
    error_kind: float
    format_error: float
    format_kind: float
    detail: float


@dataclass(frozen=True, slots=True)
class Decision:
    text: str
    #: what happened: action, completed, failed, beyond_capability, false_success, mistake:<k>, ...
    kind: str
    #: whether the text was deliberately malformed
    malformed: bool = False


def _book(task: TaskPrompt, belief: Belief | None = None) -> CraftingBook:
    if belief is None:
        return CraftingBook(task.commands)
    return CraftingBook(
        task.commands,
        extra_categories=belief.extra_categories,
        literal_items=belief.literal_items,
        unobtainable=belief.unobtainable,
    )


def believed_inventory(task: TaskPrompt) -> dict[str, int]:
    """What the executor believes it holds (context inventory + its trajectory), count > 0."""
    belief = build_belief(task, _book(task))
    return {item: n for item, n in belief.inventory.items() if n > 0}


def _goal_phrase(goal: Goal) -> str:
    return goal.text.rstrip(".")


def _completed(goal: Goal, belief: Belief, book: CraftingBook) -> str | None:
    """The success thought if the goal is believed satisfied, else None."""
    item = book.resolve(book.canonical(goal.item), belief.inventory)
    if goal.kind == "craft" and goal.ingredients is not None:
        if item in belief.crafted:
            return f"think: I crafted {item}, so I have done {_goal_phrase(goal)}. Task completed!"
        return None
    held = belief.inventory[item]
    if held >= goal.count:
        return (
            f"think: I have {held} {item} in my inventory, which is enough for the goal "
            f"({_goal_phrase(goal)}). Task completed!"
        )
    return None


def _goal_craft(goal: Goal, belief: Belief, book: CraftingBook) -> Action:
    """The craft a ``craft N X using ...`` goal asks for, with categories made concrete."""
    item = book.canonical(goal.item)
    recipe = book.recipe_for(item)
    spec: tuple[Ingredient, ...] = tuple(
        Ingredient(i.count, book.canonical(i.item)) for i in goal.ingredients or ()
    )
    if recipe is not None and (belief.goal_spec_rejected or not spec):
        spec = recipe.ingredients
    count = recipe.count if recipe is not None else goal.count
    return Action("craft", item, count, book.resolve_ingredients(spec, belief.inventory))


def make_plan(goal: Goal, belief: Belief, book: CraftingBook) -> Plan:
    """The remaining actions for ``goal`` from the believed inventory."""
    if goal.kind == "craft" and goal.ingredients is not None:
        return plan_craft_once(book, _goal_craft(goal, belief, book), belief.inventory)
    item = book.resolve(book.canonical(goal.item), belief.inventory)
    return plan_acquisition(book, item, goal.count, belief.inventory)


def _describe(plan: Plan, goal: Goal) -> str:
    crafts = [a for a in plan.actions if a.kind == "craft"]
    made = sorted({a.item for a in crafts[:-1]})
    final = crafts[-1] if crafts else None
    if final is None:
        return f"To {_goal_phrase(goal)} I would need {plan.depth} levels of crafting."
    using = ", ".join(i.render() for i in final.ingredients)
    return (
        f"To {_goal_phrase(goal)} I need {using}, and I would first have to craft "
        f"{', '.join(made) or 'other items'} myself ({plan.depth} levels of crafting)."
    )


def decide(task: TaskPrompt, knobs: Knobs, draws: Draws) -> Decision:
    """The next executor line for ``task``."""
    goal = task.goal
    if goal is None or not task.commands:
        return Decision("think: I do not understand this task. Task failed!", "failed")
    belief = build_belief(task, _book(task))
    book = _book(task, belief)
    if belief.declared is not None:
        return Decision(belief.declared, "repeat")
    done = _completed(goal, belief, book)
    if done is not None:
        return Decision(done, "completed")
    if belief.failures >= MAX_FAILURES:
        return Decision(
            f"think: {belief.failures} of my actions failed and I cannot work out how to "
            f"{_goal_phrase(goal)}. Task failed!",
            "failed",
        )
    if belief.last_failure == "not_enough" and "inventory" not in belief.actions[-2:]:
        return Decision("inventory", "check_inventory")
    if belief.uncertain and (not belief.actions or belief.actions[-1] != "inventory"):
        return Decision("inventory", "check_inventory")
    try:
        plan = make_plan(goal, belief, book)
    except PlanImpossible as exc:
        return Decision(f"think: {exc}, so I cannot {_goal_phrase(goal)}. Task failed!", "failed")
    if plan.depth > knobs.capability:
        return Decision(
            f"think: {_describe(plan, goal)} This is too complex for me to do directly. "
            "Task failed!",
            "beyond_capability",
        )
    if not plan.actions:
        return Decision("think: I already have what I need. Task completed!", "completed")
    action = plan.actions[0]
    if belief.failed_actions[action.render()] >= MAX_REPEATS:
        return Decision(
            f"think: '{action.render()}' keeps failing, so I cannot {_goal_phrase(goal)}. "
            "Task failed!",
            "failed",
        )
    if draws.false_success < knobs.false_success_rate:
        return Decision(
            f"think: I believe I have finished: {_goal_phrase(goal)}. Task completed!",
            "false_success",
        )
    if draws.error < knobs.error_rate:
        mistake = _mistake(plan, draws)
        if mistake is not None:
            return mistake
    text = action.render()
    if draws.format_error < knobs.format_error_rate:
        return _malformed(plan, draws)
    return Decision(text, "action")


def _mistake(plan: Plan, draws: Draws) -> Decision | None:
    """A realistic mistake for the next action, or None if none applies."""
    action = plan.actions[0]
    options: list[Decision] = []
    if action.kind == "get":
        first_craft = next((a for a in plan.actions if a.kind == "craft"), None)
        if first_craft is not None:
            options.append(Decision(first_craft.render(), "mistake:skipped_fetch"))
        if action.category is not None:
            category_get = f"get {action.count} {action.category}"
            options.append(Decision(category_get, "mistake:category_get"))
        if action.count > 1:
            fewer = f"get {action.count - 1} {action.item}"
            options.append(Decision(fewer, "mistake:wrong_get_count"))
    else:
        ingredients = list(action.ingredients)
        index = min(int(draws.detail * len(ingredients)), len(ingredients) - 1)
        wrong = ingredients[index]
        delta = 1 if wrong.count == 1 or draws.detail * len(ingredients) % 1 < 0.5 else -1
        ingredients[index] = Ingredient(wrong.count + delta, wrong.item)
        wrong_craft = Action("craft", action.item, action.count, tuple(ingredients))
        options.append(Decision(wrong_craft.render(), "mistake:wrong_craft_count"))
    if not options:
        return None
    return options[min(int(draws.error_kind * len(options)), len(options) - 1)]


def _malformed(plan: Plan, draws: Draws) -> Decision:
    first = plan.actions[0].render()
    if draws.format_kind < 0.5:
        second = plan.actions[1].render() if len(plan.actions) > 1 else "inventory"
        return Decision(f"{first} {second}", "format:two_actions", malformed=True)
    return Decision(f"> {first}", "format:stray_prefix", malformed=True)
