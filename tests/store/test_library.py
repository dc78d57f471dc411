"""``adapt.store.library``: a tenant's experience library on SQLite and PostgreSQL: what a run
learned enters once per goal, uses and failures are counted, an entry that keeps failing is
dropped, tenants never see each other's entries, a task sees the library as of its start, and
export/import round-trips."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.experience import (
    DROP_AFTER,
    EXPORT_FIELDS,
    PLAN,
    ExperienceReport,
    Learned,
    goal_key,
)
from adapt.store import library
from adapt.store.library import DbLibrary
from adapt.store.models import utcnow

GOAL = "craft 4 oak planks using 1 oak logs"
KEY = "gain 4 oak_planks"
ACTIONS = ("get 1 oak logs", GOAL)


def learned(goal: str = GOAL, actions: tuple[str, ...] = ACTIONS, node: int = 2,
            key: str = KEY) -> Learned:
    return Learned("textcraft", goal, key, actions, node, "sim:textcraft", True)



async def test_learn_use_fail_and_drop(sessions: async_sessionmaker[AsyncSession]) -> None:
    before = utcnow() - timedelta(seconds=1)
    acme = DbLibrary(sessions, "acme", "task-1", None)
    assert await acme.find("textcraft", KEY) is None
    await acme.save(ExperienceReport(learned=[learned(), learned(node=5)]))  # one per key
    found = await acme.find("textcraft", KEY)
    assert found is not None and found.actions == ACTIONS and found.simulated
    assert found.origin == {"task": "task-1", "node": 2}
    # another goal, another environment: not found
    assert await acme.find("textcraft", "gain 4 stick") is None
    assert await acme.find("alfworld", KEY) is None
    # an excluded entry (it failed earlier in the run) is not found again
    assert await acme.find("textcraft", KEY, frozenset({found.id})) is None

    # a task that started before the entry was made does not see it (resume-safe)
    assert await DbLibrary(sessions, "acme", "t0", before).find("textcraft", KEY) is None

    await acme.save(ExperienceReport(used=[found.id]))
    await acme.save(ExperienceReport(failed=[found.id]))
    async with sessions() as s:
        row = await library.get(s, "acme", found.id)
        assert row is not None and (row.uses, row.failures, row.failure_streak) == (1, 1, 1)
        assert row.dropped_at is None and row.last_used_at is not None
    started = utcnow()
    for _ in range(DROP_AFTER - 1):
        await acme.save(ExperienceReport(failed=[found.id]))
    assert await acme.find("textcraft", KEY) is None  # dropped
    # a task that started before the drop still finds it; one that started after does not
    assert await DbLibrary(sessions, "acme", "t", started).find("textcraft", KEY) is not None
    async with sessions() as s:
        assert (await library.page(s, "acme")).total == 0
        assert (await library.page(s, "acme", dropped=True)).total == 1
    # the goal's next confirmed solution takes the dropped one's place
    await acme.save(ExperienceReport(learned=[learned(actions=("get 2 oak logs", GOAL))]))
    again = await acme.find("textcraft", KEY)
    assert again is not None and again.id != found.id and again.actions[0] == "get 2 oak logs"


async def test_tenants_never_see_each_other(sessions: async_sessionmaker[AsyncSession]) -> None:
    acme, other = (DbLibrary(sessions, t, "t", None) for t in ("acme", "other"))
    await acme.save(ExperienceReport(learned=[learned()]))
    entry = await acme.find("textcraft", KEY)
    assert entry is not None and await other.find("textcraft", KEY) is None
    # another tenant's counts and deletes do not reach acme's entry
    await other.save(ExperienceReport(used=[entry.id], failed=[entry.id] * DROP_AFTER))
    async with sessions() as s:
        assert not await library.remove(s, "other", entry.id)
        assert await library.get(s, "other", entry.id) is None
        assert (await library.page(s, "other")).total == 0
        assert (await library.export(s, "other"))["entries"] == []
        row = await library.get(s, "acme", entry.id)
        assert row is not None and (row.uses, row.failures, row.dropped_at) == (0, 0, None)
        assert await library.remove(s, "acme", entry.id)
        assert await library.get(s, "acme", entry.id) is None


async def test_export_import_round_trips(sessions: async_sessionmaker[AsyncSession]) -> None:
    acme = DbLibrary(sessions, "acme", "t1", None)
    await acme.save(ExperienceReport(learned=[
        learned(), learned("fetch 2 stick", ("get 2 stick",), key=goal_key("fetch 2 stick"))]))
    first = await acme.find("textcraft", KEY)
    assert first is not None
    await acme.save(ExperienceReport(used=[first.id, first.id], failed=[first.id]))
    async with sessions() as s:
        exported = await library.export(s, "acme")
        assert exported["format"] == "adapt-library" and len(exported["entries"]) == 2
        done = await library.import_entries(s, "other", exported["entries"])
        assert (done.added, done.skipped) == (2, 0)
        again = await library.import_entries(s, "other", exported["entries"])
        assert (again.added, again.skipped) == (0, 2)  # a goal with a live entry keeps it
        back = await library.export(s, "other")

    def same(doc: dict[str, object]) -> list[dict[str, object]]:
        fields = [f for f in EXPORT_FIELDS if f != "origin"]
        return [{f: e[f] for f in fields} for e in doc["entries"]]  # type: ignore[attr-defined]

    assert same(back) == same(exported)
    assert same(back)[0]["uses"] == 2 and same(back)[0]["failures"] == 1
    assert all(e["origin"]["imported"] is True for e in back["entries"])
    assert back["entries"][0]["origin"]["task"] == "t1"


async def test_plans_are_their_own_kind_per_tenant_and_round_trip(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    acme, other = (DbLibrary(sessions, t, "t", None) for t in ("acme", "other"))
    plan = Learned("textcraft", "craft beehive", "gain 1 beehive", ("fetch 3 honeycomb", GOAL),
                   1, "sim:textcraft", True, kind=PLAN, logic="(Step 1 AND Step 2)")
    await acme.save(ExperienceReport(learned=[plan, learned(key="gain 1 beehive")]))
    found = await acme.find("textcraft", "gain 1 beehive", kind=PLAN)
    assert found is not None and found.kind == PLAN and found.logic == "(Step 1 AND Step 2)"
    assert found.actions == ("fetch 3 honeycomb", GOAL) and found.origin["node"] == 1
    skill = await acme.find("textcraft", "gain 1 beehive")  # one key: a skill and a plan
    assert skill is not None and skill.kind == "skill" and skill.id != found.id
    # never another tenant's
    assert await other.find("textcraft", "gain 1 beehive", kind=PLAN) is None
    await other.save(ExperienceReport(failed=[found.id] * DROP_AFTER))
    assert await acme.find("textcraft", "gain 1 beehive", kind=PLAN) is not None
    # a failing plan is dropped like a skill; the skill stays
    await acme.save(ExperienceReport(failed=[found.id] * DROP_AFTER))
    assert await acme.find("textcraft", "gain 1 beehive", kind=PLAN) is None
    assert await acme.find("textcraft", "gain 1 beehive") is not None
    # export/import keep the kind and the order
    await acme.save(ExperienceReport(learned=[plan]))
    async with sessions() as s:
        exported = await library.export(s, "acme")
        kinds = sorted((e["kind"], e["logic"]) for e in exported["entries"])
        assert kinds == [("plan", "(Step 1 AND Step 2)"), ("skill", None)]
        done = await library.import_entries(s, "third", exported["entries"])
        assert (done.added, done.skipped) == (2, 0)
    third = DbLibrary(sessions, "third", "t", None)
    back = await third.find("textcraft", "gain 1 beehive", kind=PLAN)
    assert back is not None and back.logic == "(Step 1 AND Step 2)" and back.origin["imported"]
