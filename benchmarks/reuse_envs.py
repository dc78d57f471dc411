"""Does reuse (issue 31) help or hurt on ALFWorld's generated games and on InterCode-SQL?

No simulated model plays either environment (``sim:textcraft`` knows TextCraft only; there is
no simulated SQL model), so the runs use scripted stand-ins that read the game or the
question, as the benches' tests do. They are deterministic, cost nothing, and never err on
their own: what changes between settings is only what reuse does.

ALFWorld (generated games, ADaPT at d_max 3, verification on, one game at a time):

- ``oracle``: the executor plays the game's walkthrough at the root (solved there, no plan);
- ``decomposer``: the root's executor gives up at once, the planner writes the game's
  walkthrough as one step per action, and a sub-task's executor sends its goal as the action
  (then says it is done). Its sub-goals (``go to countertop 1``, ``take mug 1 from ...``) are
  what skills can replay, its root plans what plan reuse can reuse.

InterCode-SQL (ADaPT at d_max 2): ``gold`` writes the question's gold query and submits it:
at the root for every second question (by position); for the others the root's executor
gives up and the planner's one-step plan (write the query, run it, submit it) does it.

Each setting warms a library on one set (skills and plans on, learning) and tests on another
with the library frozen; ``--repeat`` tests on the warming set itself (the same questions
asked again).

    python -m benchmarks.reuse_envs alfworld --warm 30 --test 24
    python -m benchmarks.reuse_envs sql --data /work/shared/data/intercode-sql --warm 40 \\
        --test 40
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.experience import MemoryLibrary
from adapt.envs.base import Environment
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel

_TASK = re.compile(r"Your task is to: (.+?)\.(?:\n|$)")
_GOAL = re.compile(r"^(?:Goal|Task): (.+?)\.?$", re.MULTILINE)
GAVE_UP = "think: I cannot do this. Task failed!"
DONE = "think: I did it. Task completed!"

#: (label, reuse settings) of the test runs
SETTINGS: list[tuple[str, dict[str, Any] | None]] = [
    ("no reuse", None),
    ("skills", {"skills": True}),
    ("plans (reuse)", {"plans": True}),
    ("plans (example)", {"plans": True, "plans_mode": "example"}),
    ("skills + plans", {"skills": True, "plans": True}),
]


@dataclass
class Game:
    """One task: how to make its environment and config, and its scripted model."""

    id: str
    make_env: Callable[[], Environment]
    config: dict[str, Any]
    model: Callable[[], FunctionModel]


def _after(prompt: str, marker: re.Pattern[str]) -> tuple[str, int] | None:
    """The last task sentence in ``prompt`` and the actions taken since."""
    found = list(marker.finditer(prompt))
    if not found:
        return None
    last = found[-1]
    return last.group(1).strip(), prompt[last.end():].count("\n> ")


# -- ALFWorld ------------------------------------------------------------------------------
def alfworld_games(split: str, limit: int, kind: str) -> list[Game]:
    from adapt.envs.alfworld import ALFWorld
    from adapt.envs.alfworld.games import generated_game
    from adapt.eval.alfworld import select_games

    games = []
    for ref in select_games(split, limit=limit):
        game = generated_game(split, int(ref.config["index"]))
        sentence = re.search(r"Your task is to: (.+?)\.", game.grammar)
        goal = sentence.group(1) if sentence else ""
        walk = list(game.walkthrough)
        maker = _oracle if kind == "oracle" else _decomposer
        games.append(Game(ref.id, ALFWorld, dict(ref.config), partial(maker, goal, walk)))
    return games


def _oracle(goal: str, walk: list[str]) -> FunctionModel:
    def reply(request: ChatRequest) -> str:
        prompt = request.as_prompt()
        if request.role != "executor":
            return "Step 1: do it\nExecution Order: (Step 1)"
        seen = _after(prompt, _TASK)
        done = 0 if seen is None else max(seen[1] - 1, 0)
        return walk[done] if done < len(walk) else GAVE_UP

    return FunctionModel(reply, name="oracle")


def _decomposer(goal: str, walk: list[str]) -> FunctionModel:
    def reply(request: ChatRequest) -> str:
        prompt = request.as_prompt()
        seen = _after(prompt, _TASK)
        current = seen[0] if seen else ""
        if request.role == "planner":
            asked = _GOAL.findall(prompt)
            target = asked[-1] if asked else current
            steps = walk if _same(target, goal) else [target]
            return ("\n".join(f"Step {i}: {s}" for i, s in enumerate(steps, 1))
                    + "\nExecution Order: ("
                    + " AND ".join(f"Step {i}" for i in range(1, len(steps) + 1)) + ")")
        if _same(current, goal):
            return GAVE_UP
        sent = re.findall(r"^> (.+)$", prompt, re.MULTILINE)  # context lines are actions too
        return DONE if sent and _same(sent[-1], current) else current

    return FunctionModel(reply, name="decomposer")


def _same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()).rstrip(".") == " ".join(b.lower().split()).rstrip(".")


# -- InterCode-SQL -------------------------------------------------------------------------
def sql_games(data: str, start: int, limit: int) -> list[Game]:
    from adapt.envs.intercode_sql import InterCodeSQL
    from adapt.envs.intercode_sql.task_sets import tasks

    chosen = tasks(data)[start:start + limit]
    games = []
    for n, t in enumerate(chosen, start):
        at_root = n % 2 == 0
        games.append(Game(f"sql/{n}", InterCodeSQL, t.config,
                          partial(_gold, t.gold, t.question, at_root)))
    return games


def _gold(gold: str, question: str, at_root: bool) -> FunctionModel:
    """Writes the gold query and submits it: at the root (``at_root``), else only in the
    planner's sub-task (the root's executor gives up, the plan is one step)."""
    def reply(request: ChatRequest) -> str:
        prompt = request.as_prompt()
        if request.role == "planner":
            return ("Step 1: write the query that answers the question, run it and submit it"
                    "\nExecution Order: (Step 1)")
        seen = _after(prompt, re.compile(r"Task: (.+?)(?:\n|$)"))
        if seen is not None and _same(seen[0], question) and not at_root:
            return GAVE_UP
        taken = 0 if seen is None else max(seen[1] - 1, 0)  # the prompt ends with "> "
        return [f"execute[{gold}]", "submit"][min(taken, 1)]

    return FunctionModel(reply, name="gold")


# -- running ---------------------------------------------------------------------------------
async def run_set(games: Sequence[Game], config: RunConfig, library: MemoryLibrary | None,
                  learn: bool) -> dict[str, Any]:
    rows = []
    for game in games:
        env = game.make_env()
        sink = MemorySink()
        model = game.model()
        started = time.monotonic()
        try:
            result = await run_task(env, game.config, config, model, model, sink=sink,
                                    library=None if library is None
                                    else library.for_task(game.id, learn=learn))
        finally:
            env.close()
        actions = sum(1 for e in sink.events if e.type == "step" and e.step.kind == "action")
        rows.append({
            "id": game.id, "success": result.success, "reward": result.reward,
            "calls": result.usage.llm_calls,
            "executor": result.usage_by_role.get("executor", _zero()).llm_calls,
            "planner": result.usage_by_role.get("planner", _zero()).llm_calls,
            "actions": actions,
            "reused_nodes": sum(1 for n in sink.nodes.values() if n.reused is not None),
            "reused_plans": sum(1 for n in sink.nodes.values() if n.plan is not None
                                and (n.plan.reused or {}).get("mode") == "reuse"),
            # stored plans that failed, after which the planner planned again
            "replanned": sum(1 for n in sink.nodes.values() if n.plan is not None and any(
                w.startswith("planned again") for w in n.plan.warnings)),
            "seconds": time.monotonic() - started})
    n = len(rows) or 1
    return {
        "tasks": len(rows), "solved": sum(r["reward"] > 0 for r in rows),
        "false_successes": sum(1 for r in rows if r["success"] and r["reward"] < 1.0),
        "calls": sum(r["calls"] for r in rows) / n,
        "executor": sum(r["executor"] for r in rows),
        "planner": sum(r["planner"] for r in rows),
        "actions": sum(r["actions"] for r in rows) / n,
        "reused_nodes": sum(r["reused_nodes"] for r in rows),
        "reused_plans": sum(r["reused_plans"] for r in rows),
        "replanned": sum(r["replanned"] for r in rows),
        "seconds": sum(r["seconds"] for r in rows)}


def _zero() -> Any:
    from adapt.engine.tree import UsageTotals

    return UsageTotals()


async def measure(warm: Sequence[Game], test: Sequence[Game], d_max: int,
                  learning: bool = True) -> dict[str, Any]:
    base = RunConfig(d_max=d_max)
    library = MemoryLibrary()
    warmed = await run_set(warm, base.model_copy(update={"reuse": base.reuse.model_copy(
        update={"skills": True, "plans": True})}), library, learn=True)
    live = [e for e in library.entries.values() if not e.dropped]
    out: dict[str, Any] = {"warm": {**warmed, "entries": len(live),
                                    "plans": sum(e.kind == "plan" for e in live)},
                           "rows": {}}
    for label, reuse in SETTINGS:
        config = base if reuse is None else base.model_copy(
            update={"reuse": base.reuse.model_copy(update=reuse)})
        out["rows"][label] = await run_set(test, config, None if reuse is None
                                           else library.copy(), learn=False)
        if reuse is not None and learning:  # and learning as it goes
            out["rows"][f"{label}, learning"] = await run_set(test, config, library.copy(),
                                                              learn=True)
    return out


def table(result: dict[str, Any]) -> str:
    head = ("| setting | solved | false successes | LLM calls / task | executor / planner "
            "calls | actions / task | nodes reused | plans reused (kept / failed) |\n"
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    lines = [head]
    for label, r in result["rows"].items():
        lines.append(f"| {label} | {r['solved']}/{r['tasks']} | {r['false_successes']} | "
                     f"{r['calls']:.2f} | {r['executor']} / {r['planner']} | "
                     f"{r['actions']:.1f} | {r['reused_nodes']} | "
                     f"{r['reused_plans']} / {r['replanned']} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env", choices=["alfworld", "sql"])
    parser.add_argument("--model", default="decomposer", choices=["oracle", "decomposer"],
                        help="ALFWorld's scripted model")
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--test", type=int, default=24)
    parser.add_argument("--repeat", action="store_true",
                        help="test on the warming set itself")
    parser.add_argument("--frozen-only", action="store_true",
                        help="skip the settings whose library keeps learning")
    parser.add_argument("--data", default="/work/shared/data/intercode-sql")
    parser.add_argument("--out", default=None, help="write the result as JSON here")
    args = parser.parse_args(argv)
    if args.env == "alfworld":
        warm = alfworld_games("dev", args.warm, args.model)
        test = warm if args.repeat else alfworld_games("test", args.test, args.model)
        d_max = 3
    else:
        warm = sql_games(args.data, 0, args.warm)
        test = warm if args.repeat else sql_games(args.data, args.warm, args.test)
        d_max = 2
    result = asyncio.run(measure(warm, test, d_max, learning=not args.frozen_only))
    print(json.dumps(result["warm"]))
    print(table(result))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
