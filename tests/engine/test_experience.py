"""Skill reuse in the engine: an entry enters the library only after the environment confirmed
its node; a replay the environment confirms ends the node with no LLM call and names its
origin; a replay it does not confirm falls back to the executor and demotes the entry (which
is dropped when it keeps failing); rolled back where the environment rolls back."""

from __future__ import annotations

from typing import Any

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.experience import DROP_AFTER, Entry, MemoryLibrary
from adapt.engine.reuse import REPLAY_NOTE
from adapt.envs.base import StepResult
from adapt.envs.textcraft import TextCraft
from adapt.llm.testing import ScriptedModel
from tests.engine.toy import ToyEnv

BEEHIVE = {"goal": "craft beehive", "commands": [
    "craft 1 beehive using 6 planks, 3 honeycomb",
    "craft 4 oak planks using 1 oak logs",
    "craft 4 stick using 2 planks",
]}
PLANKS = "craft 4 oak planks using 1 oak logs"
PLAN = f"Step 1: {PLANKS}\nExecution Order: (Step 1)"
SOLVE = ["get 1 oak logs", PLANKS]
REUSE = RunConfig(d_max=2, reuse={"skills": True})


def child(sink: MemorySink) -> Any:
    return next(n for n in sink.nodes.values() if n.goal == PLANKS)


async def run(library: MemoryLibrary, task: str, executor: list[str],
              config: RunConfig = REUSE, env: TextCraft | None = None
              ) -> tuple[MemorySink, ScriptedModel]:
    sink = MemorySink()
    model = ScriptedModel(executor)
    await run_task(env or TextCraft(), BEEHIVE, config, model, ScriptedModel([PLAN]),
                   sink=sink, library=library.for_task(task))
    assert model.remaining == 0
    return sink, model


def poisoned(library: MemoryLibrary, actions: tuple[str, ...]) -> Entry:
    entry = Entry(99, "textcraft", PLANKS, "gain 4 oak_planks", actions,
                  {"task": "old", "node": 7})
    library.entries[entry.id] = entry
    return entry


async def test_a_confirmed_node_is_learned_and_replayed_with_no_call() -> None:
    library = MemoryLibrary()
    # the root's executor gives up (refuted: not learned); the child's run is confirmed
    sink, _ = await run(library, "first", ["think: Task failed.", *SOLVE])
    assert child(sink).verdict == "confirmed" and child(sink).reused is None
    [entry] = library.entries.values()
    assert (entry.goal, entry.actions) == (PLANKS, tuple(SOLVE))
    assert entry.origin == {"task": "first", "node": 2} and entry.simulated
    assert (entry.uses, entry.failures) == (0, 0)

    # the next task: the child is solved by the replay, its executor never called
    sink, model = await run(library, "second", ["think: Task failed."])
    node = child(sink)
    assert (node.status, node.termination, node.verdict) == ("succeeded", "reused", "confirmed")
    assert node.usage.llm_calls == 0 and node.claim is None
    assert node.reused == {"entry": entry.id, "task": "first", "node": 2, "simulated": True}
    steps = [e.step for e in sink.events if e.type == "step" and e.step.node_id == node.id]
    assert [s.text for s in steps] == SOLVE and [s.index for s in steps] == [1, 2]
    assert all(s.extra == {"replay": node.reused} for s in steps)
    assert len(model.requests) == 1  # the root's only
    assert (entry.uses, entry.failures) == (1, 0) and len(library.entries) == 1


async def test_goals_the_environment_says_are_the_same_share_a_solution() -> None:
    library = MemoryLibrary()
    await run(library, "first", ["think: Task failed.", *SOLVE])
    [entry] = library.entries.values()
    assert entry.goal_key == "gain 4 oak_planks"  # TextCraft's canonical form of the goal
    sink = MemorySink()
    model = ScriptedModel(["think: Task failed."])
    other = "Step 1: Craft 4 Oak Planks.\nExecution Order: (Step 1)"
    await run_task(TextCraft(), BEEHIVE, REUSE, model, ScriptedModel([other]), sink=sink,
                   library=library.for_task("second"))
    node = next(n for n in sink.nodes.values() if n.depth == 2)
    assert node.goal.startswith("Craft 4 Oak Planks")
    assert node.termination == "reused" and model.remaining == 0 and entry.uses == 1


async def test_nothing_is_learned_without_a_confirmed_verdict() -> None:
    library = MemoryLibrary()
    # the child claims success without doing anything: refuted, not learned
    await run(library, "claims", ["think: Task failed.", "think: Task completed!"])
    assert library.entries == {}
    # reuse off: nothing is learned (or replayed) even from a confirmed node
    await run(library, "off", ["think: Task failed.", *SOLVE], RunConfig(d_max=2))
    assert library.entries == {}
    # verification off: no verdict, so no reuse at all
    await run(library, "unverified", ["think: Task failed.", *SOLVE, "think: Task completed!"],
              RunConfig(d_max=2, reuse={"skills": True}, verification="off"))
    assert library.entries == {}


async def test_a_failed_replay_falls_back_demotes_and_is_dropped() -> None:
    library = MemoryLibrary()
    stale = poisoned(library, ("get 1 oak logs",))  # not enough: no planks crafted

    sink, model = await run(library, "one", ["think: Task failed.", PLANKS])
    node = child(sink)
    # the executor ran from the state the replay left (1 oak log held) and solved it
    assert (node.status, node.termination, node.reused) == ("succeeded", "verified", None)
    steps = [e.step for e in sink.events if e.type == "step" and e.step.node_id == node.id]
    assert [(s.index, s.text, bool(s.extra and "replay" in s.extra)) for s in steps] == [
        (1, "get 1 oak logs", True), (2, PLANKS, False)]
    note = REPLAY_NOTE.split("{")[0]
    assert note in model.requests[1].as_prompt() and "oak log" in (node.context_in or "")
    assert (stale.uses, stale.failures, stale.failure_streak, stale.dropped) == (0, 1, 1, False)
    assert list(library.entries) == [99]  # a goal with a live entry keeps it

    await run(library, "two", ["think: Task failed.", PLANKS])
    assert (stale.failures, stale.dropped) == (DROP_AFTER, True)
    # dropped: never found again; the goal's confirmed solution of the same run (the
    # replayed fetch, then the executor's craft) takes its place
    fresh = [e for e in library.entries.values() if not e.dropped]
    assert [(e.actions, e.origin["task"]) for e in fresh] == [(tuple(SOLVE), "two")]
    sink, _ = await run(library, "three", ["think: Task failed."])
    assert child(sink).reused == {"entry": fresh[0].id, "task": "two", "node": 2,
                                  "simulated": True}


async def test_a_decomposed_goal_is_learned_as_its_subtrees_actions() -> None:
    library = MemoryLibrary()
    craft = "craft 1 beehive using 6 oak planks, 3 honeycomb"
    plan = (f"Step 1: fetch 3 honeycomb\nStep 2: {PLANKS}\nStep 3: {PLANKS}\nStep 4: {craft}"
            "\nExecution Order: (Step 1 AND Step 2 AND Step 3 AND Step 4)")
    executor = ScriptedModel(["think: Task failed.", "get 3 honeycomb", *SOLVE, *SOLVE, craft])
    first = MemorySink()
    result = await run_task(TextCraft(), BEEHIVE, REUSE, executor, ScriptedModel([plan]),
                            sink=first, library=library.for_task("first"))
    assert result.success and executor.remaining == 0
    root = next(e for e in library.entries.values() if e.goal == "craft beehive")
    assert root.actions == ("get 3 honeycomb", *SOLVE, *SOLVE, craft)
    assert root.origin == {"task": "first", "node": 1}
    # the same task again: the root is replayed, no executor, no planner, no sub-task
    again = MemorySink()
    result = await run_task(TextCraft(), BEEHIVE, REUSE, ScriptedModel([]), ScriptedModel([]),
                            sink=again, library=library.for_task("second"))
    assert result.success and result.reward == 1.0 and result.usage.llm_calls == 0
    assert list(again.nodes) == [1] and again.nodes[1].termination == "reused"
    assert root.uses == 1


class UndoCraft(TextCraft):
    """TextCraft that rolls failed sub-tasks back (as ALFWorld does)."""

    def rolls_back(self) -> bool:
        return True

    def checkpoint(self) -> object:
        return dict(self._inventory), dict(self._produced), self._solved

    def rollback(self, mark: object) -> None:
        inventory, produced, solved = mark  # type: ignore[misc]
        self._inventory, self._produced, self._solved = dict(inventory), dict(produced), solved


async def test_a_failed_replay_is_rolled_back_where_the_environment_rolls_back() -> None:
    library = MemoryLibrary()
    stale = poisoned(library, ("get 1 oak logs",))
    env = UndoCraft()
    # rolled back: the log the replay fetched is gone, the executor fetches its own
    sink, model = await run(library, "undo", ["think: Task failed.", *SOLVE], env=env)
    assert child(sink).termination == "verified" and stale.failures == 1
    assert "rolled back" in model.requests[1].as_prompt()
    assert env.inventory == {"oak_planks": 4}  # no log left over from the replay


class BrokenLibrary:
    """Finds nothing; cannot save (a database that went away)."""

    async def find(self, environment: str, key: str,
                   exclude: frozenset[int] = frozenset(), kind: str = "skill") -> None:
        return None

    async def save(self, report: object) -> None:
        raise RuntimeError("database down")


async def test_a_library_that_cannot_save_leaves_the_result_standing(
        caplog: Any) -> None:
    model = ScriptedModel(["think: Task failed.", *SOLVE])
    result = await run_task(TextCraft(), BEEHIVE, REUSE, model, ScriptedModel([PLAN]),
                            library=BrokenLibrary())
    assert result.status == "failed" and model.remaining == 0  # the root is not reached
    assert "did not take this task's experience (1 solutions" in caplog.text


class QuitEnv(ToyEnv):
    """``quit`` ends the episode with no reward."""

    def step(self, action: str) -> StepResult:
        if action == "quit":
            self.actions.append(action)
            return StepResult("Bye.", 0.0, True)
        return super().step(action)


async def test_a_replay_that_ends_the_episode_ends_the_node() -> None:
    library = MemoryLibrary()
    entry = Entry(5, "toy", "do the thing", "do the thing", ("quit",), {"task": "t", "node": 1})
    library.entries[entry.id] = entry
    sink = MemorySink()
    result = await run_task(QuitEnv(), {}, RunConfig(d_max=2, reuse={"skills": True}),
                            ScriptedModel([]), ScriptedModel([]), sink=sink,
                            library=library.for_task("t2"))
    root = sink.nodes[1]
    assert result.status == "failed" and result.usage.llm_calls == 0
    assert (root.status, root.termination, root.reused) == ("failed", "done", None)
    assert list(sink.nodes) == [1] and entry.failures == 1


async def test_a_replayed_action_is_asked_about_where_the_task_asks() -> None:
    """``approval.actions`` gates a replay's actions as it gates the executor's: a stored
    solution is no way around a person's decision."""
    from adapt.engine.approvals import ApprovalRequest, Decision

    library = MemoryLibrary()
    await run(library, "first", ["think: Task failed.", *SOLVE])
    asked: list[ApprovalRequest] = []

    async def gate(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision(decision="reject", reason="not now")

    sink = MemorySink()
    executor = ScriptedModel(["think: Task failed.", "think: Task failed."])
    config = RunConfig(d_max=2, reuse={"skills": True}, approval={"actions": ["craft"]})
    await run_task(TextCraft(), BEEHIVE, config, executor, ScriptedModel([PLAN]), sink=sink,
                   library=library.for_task("second"), approvals=gate)
    replayed = [s for s in sink.steps[child(sink).id]
                if (s.extra or {}).get("replay")]
    assert [s.text for s in replayed] == SOLVE  # sent through the gate, in order
    assert [r.proposal["action"] for r in asked] == [PLANKS]  # `get` is not asked about
    assert replayed[1].observation.startswith("A person rejected")
    assert child(sink).reused is None  # not confirmed: the executor ran
