"""Generate ALFWorld games offline from ALFWorld's own FloorPlan layouts and goal library.

A game is drafted the way ALFRED drafts its scenes, in ALFWorld's terms:

1. a scene: a FloorPlan whose room kind suits the task type (``GOALS_VALID``) and that has
   what the task needs (a sink basin to clean, a microwave to heat, a fridge to cool, a lamp to
   look under); its receptacles are the layout's (``-openable.json``, with their viewpoints) plus
   one of each other receptacle class the scene lists (``-objects.json``: a stove burner, a
   toaster, ...);
2. the task: an object class (cleanable for ``clean`` and so on) and a receptacle class that
   can hold it (``VAL_RECEPTACLE_OBJECTS``), the lamp for ``examine``;
3. objects: one to three of every portable class of the scene, each in a receptacle that can
   hold it; the target objects never start in the target receptacle class (the goal must not
   hold already), and ``pick_two`` gets at least two;
4. the PDDL problem, written like ALFRED's (``PlannedGameState.state_to_pddl``): the same
   predicates and the same id mangling, with the goal from ``goal_library`` and the task
   sentence from its templates (``Your task is to: put a clean mug in countertop.``).

Every draft is then played: the engine loads it, Fast Downward plans from the start, and the
plan is replayed through the engine; a draft is used only when the replay wins (otherwise the
next draft from the same random stream is tried). The plan is kept as the game's walkthrough.
Everything is deterministic per ``(seed, task_type, scene)``.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from adapt.envs.alfworld import assets
from adapt.envs.alfworld.game import Game
from adapt.errors import InvalidConfig

logger = logging.getLogger(__name__)

#: drafts tried per game before giving up
MAX_DRAFTS = 40
#: object instances per portable class (the target class may get more, see below)
INSTANCES = (1, 2)
#: receptacle classes a lamp may stand on (``examine`` tasks)
LAMP_HOSTS = frozenset({"Desk", "SideTable", "Dresser", "Shelf", "CoffeeTable", "DiningTable",
                        "TVStand", "ArmChair", "Sofa", "Cart"})
#: the appliance each state-changing task type needs, and may not use as its target
APPLIANCE = {"clean": "SinkBasin", "heat": "Microwave", "cool": "Fridge"}
#: ``VAL_ACTION_OBJECTS`` key of the object property each task type needs
PROPERTY = {"clean": "Cleanable", "heat": "Heatable", "cool": "Coolable"}
_MANGLE = {"-": "_minus_", "#": "-", "|": "_bar_", "+": "_plus_", ".": "_dot_", ",": "_comma_"}


def mangle(text: str) -> str:
    """ALFRED's ``fix_pddl_str_chars``: ``Mug|+00.61`` -> ``Mug_bar__plus_00_dot_61``."""
    return "".join(_MANGLE.get(ch, ch) for ch in text)


def receptacle_class(receptacle_id: str) -> str:
    """``Cabinet|+00.68|...`` -> ``Cabinet``; ``Sink|...|SinkBasin`` -> ``SinkBasin``."""
    parts = receptacle_id.split("|")
    return parts[-1] if parts[-1].endswith("Basin") else parts[0]


@dataclass
class _Scene:
    number: int
    #: receptacle id -> class
    receptacles: dict[str, str]
    #: receptacle id -> location id
    locations: dict[str, str]
    start: str
    #: portable object classes that have a receptacle to be in
    portable: list[str]
    lamps: list[str]


def _coords(rng: random.Random) -> str:
    return "|".join(f"{rng.uniform(-3, 3):+06.2f}" for _ in range(3))


def _scene(number: int, rng: random.Random) -> _Scene:
    c = assets.constants()
    lay = assets.layout(number)
    receptacles = {rid: receptacle_class(rid) for rid in lay.receptacles}
    fixed = set(c.RECEPTACLES) - set(c.MOVABLE_RECEPTACLES)
    for cls in lay.classes:  # receptacle classes the layout has no viewpoint for
        if cls in fixed and cls not in receptacles.values():
            rid = f"{cls[:-5]}|{_coords(rng)}|{cls}" if cls.endswith("Basin") else (
                f"{cls}|{_coords(rng)}")
            receptacles[rid] = cls
    used: set[str] = set()

    def location(x: float, z: float, rotation: float, horizon: float) -> str:
        gx, gz = round(x / 0.25), round(z / 0.25)
        loc = f"loc|{gx}|{gz}|{round(rotation / 90) % 4}|{round(horizon)}"
        while loc in used:  # one receptacle per location, as the "go to" template expects
            gx += 1
            loc = f"loc|{gx}|{gz}|{round(rotation / 90) % 4}|{round(horizon)}"
        used.add(loc)
        return loc

    locations = {}
    for rid in sorted(receptacles):
        point = lay.receptacles.get(rid)
        if point is None:
            point = (rng.uniform(-3, 3), rng.uniform(-3, 3), 90.0 * rng.randrange(4), 30.0)
        locations[rid] = location(*point)
    start = location(rng.uniform(-3, 3), rng.uniform(-3, 3), 90.0 * rng.randrange(4), 30.0)
    present = set(receptacles.values())
    holders = c.VAL_RECEPTACLE_OBJECTS
    portable = [
        cls for cls in lay.classes
        if "Sliced" not in cls and any(cls in holders.get(r, ()) for r in present)
    ]
    lamps: list[str] = [cls for cls in ("DeskLamp", "FloorLamp") if cls in lay.classes]
    return _Scene(number, receptacles, locations, start, portable, lamps)


def _fits(scene: _Scene, task_type: str) -> bool:
    kinds = assets.constants().GOALS_VALID[assets.TASK_TYPES[task_type]]
    if assets.room_kind(scene.number) not in kinds:
        return False
    present = set(scene.receptacles.values())
    if task_type in APPLIANCE and APPLIANCE[task_type] not in present:
        return False
    return task_type != "examine" or bool(scene.lamps and present & LAMP_HOSTS)


@dataclass
class _Task:
    obj: str
    recep: str | None
    toggle: str | None


def _task(scene: _Scene, task_type: str, rng: random.Random) -> _Task | None:
    c = assets.constants()
    present = sorted(set(scene.receptacles.values()))
    holders = c.VAL_RECEPTACLE_OBJECTS
    candidates = list(scene.portable)
    if task_type in PROPERTY:
        candidates = [o for o in candidates if o in c.VAL_ACTION_OBJECTS[PROPERTY[task_type]]]
    rng.shuffle(candidates)
    for obj in candidates:
        if task_type == "examine":
            return _Task(obj, None, scene.lamps[0])
        targets = [r for r in present if obj in holders.get(r, ()) and r != APPLIANCE.get(
            task_type)]
        # the object must be able to start somewhere other than the target class
        starts = {r for r in present if obj in holders.get(r, ())}
        targets = [r for r in targets if starts - {r}]
        if targets:
            return _Task(obj, rng.choice(targets), None)
    return None


def _place(scene: _Scene, task_type: str, task: _Task,
           rng: random.Random) -> dict[str, tuple[str, str]] | None:
    """Object id -> (class, receptacle id) for every object of the game; None if impossible."""
    c = assets.constants()
    holders = c.VAL_RECEPTACLE_OBJECTS
    objects: dict[str, tuple[str, str]] = {}

    def place(cls: str, count: int, exclude: str | None) -> int:
        if cls in ("DeskLamp", "FloorLamp"):
            hosts = [rid for rid, rc in sorted(scene.receptacles.items())
                     if rc in LAMP_HOSTS and rc not in c.OPENABLE_CLASS_SET]
        else:
            hosts = [rid for rid, rc in sorted(scene.receptacles.items())
                     if cls in holders.get(rc, ()) and rc != exclude]
        if not hosts:
            return 0
        for _ in range(count):
            oid = f"{cls}|{_coords(rng)}"
            while oid in objects:
                oid = f"{cls}|{_coords(rng)}"
            objects[oid] = (cls, rng.choice(hosts))
        return count

    least = 2 if task_type == "pick_two" else 1
    for cls in scene.portable:
        if cls == task.obj:
            count = rng.randint(2, 3) if task_type == "pick_two" else rng.randint(1, 3)
            if place(cls, count, task.recep) < least:
                return None
        else:
            place(cls, rng.randint(*INSTANCES), None)
    if task.toggle is not None and not place(task.toggle, 1, None):
        return None
    return objects


def _problem(scene: _Scene, task_type: str, task: _Task, objects: dict[str, tuple[str, str]],
             receptacles: set[str] | None = None) -> str:
    """The PDDL problem (ALFRED's predicates and id mangling); ``receptacles``: only those
    receptacles, and only the objects in them (the planning abstraction, see ``solve``)."""
    c = assets.constants()
    holders = c.VAL_RECEPTACLE_OBJECTS
    kept = {rid: cls for rid, cls in scene.receptacles.items()
            if receptacles is None or rid in receptacles}
    objects = {oid: (cls, rid) for oid, (cls, rid) in objects.items() if rid in kept}
    object_classes = sorted({cls for cls, _ in objects.values()})
    receptacle_classes = sorted(set(kept.values()))
    locations = sorted({*(scene.locations[rid] for rid in kept), scene.start})
    lines = ["(define (problem plan_generated)", "    (:domain alfred)", "    (:objects",
             "        agent1 # agent"]
    lines += [f"        {cls}Type # otype" for cls in object_classes]
    lines += [f"        {cls}Type # rtype" for cls in receptacle_classes]
    lines += [f"        {oid} # object" for oid in sorted(objects)]
    lines += [f"        {rid} # receptacle" for rid in sorted(kept)]
    lines += [f"        {loc} # location" for loc in locations]
    lines += ["        )", "    (:init"]
    init = [f"(atLocation agent1 {scene.start})"]
    for rid, cls in sorted(kept.items()):
        init.append(f"(receptacleType {rid} {cls}Type)")
        init.append(f"(receptacleAtLocation {rid} {scene.locations[rid]})")
        if cls in c.OPENABLE_CLASS_SET:
            init.append(f"(openable {rid})")
    actions = c.VAL_ACTION_OBJECTS
    for oid, (cls, rid) in sorted(objects.items()):
        init += [f"(objectType {oid} {cls}Type)", f"(inReceptacle {oid} {rid})",
                 f"(objectAtLocation {oid} {scene.locations[rid]})"]
        if cls in actions["Toggleable"]:
            if cls == task.toggle:
                init.append(f"(toggleable {oid})")
            continue  # lamps stay where they are
        init.append(f"(pickupable {oid})")
        for prop, fact in (("Cleanable", "cleanable"), ("Heatable", "heatable"),
                           ("Coolable", "coolable"), ("Sliceable", "sliceable")):
            if cls in actions[prop]:
                init.append(f"({fact} {oid})")
        if cls in c.MOVABLE_RECEPTACLES_SET:
            init.append(f"(isReceptacleObject {oid})")
    for rc in receptacle_classes:
        for oc in object_classes:
            if oc in holders.get(rc, ()):
                init.append(f"(canContain {rc}Type {oc}Type)")
    lines += [f"        {fact}" for fact in init]
    lines += ["        )"]
    goal = assets.goal_library()[assets.TASK_TYPES[task_type]]["pddl"].format(
        obj=task.obj, recep=task.recep or "", toggle=task.toggle or "", mrecep="")
    return mangle("\n".join(lines)) + "\n" + mangle(goal)


def _relevant(scene: _Scene, task_type: str, task: _Task,
              objects: dict[str, tuple[str, str]]) -> set[str]:
    """The receptacles a solution can need: where the target objects and the lamp are, the
    target receptacles and the appliance."""
    classes = {task.recep, APPLIANCE.get(task_type)} - {None}
    keep = {rid for rid, cls in scene.receptacles.items() if cls in classes}
    keep |= {rid for cls, rid in objects.values() if cls in (task.obj, task.toggle)}
    return keep


def _sentence(task_type: str, task: _Task, rng: random.Random) -> str:
    templates = assets.goal_library()[assets.TASK_TYPES[task_type]]["templates"]
    template: str = rng.choice(templates)
    return template.format(obj=task.obj.lower(), recep=(task.recep or "").lower(),
                           toggle=(task.toggle or "").lower(), mrecep="")


def solve(game: dict[str, str], planning: dict[str, str] | None = None) -> tuple[str, ...] | None:
    """Fast Downward's walkthrough if replaying it through the engine wins ``game``, else None.

    Fast Downward searches blind here (uniform cost, as textworld calls it), which explodes on
    a whole household. ``planning`` may be a smaller version of the game (the same ids, only
    the receptacles a solution can use, see ``_relevant``): the plan is searched there, named
    with ``game``'s names, and replayed through ``game`` itself, so it is only accepted when it
    wins the real game.
    """
    from adapt.envs.alfworld.engine import Household  # textworld: imported on first use

    played = Household()
    planner = Household() if planning is not None else played
    try:
        played.load(game)
        played.reset()
        if planning is not None:
            planner.load(planning)
            planner.reset()
        plan = planner.plan(names=played)
        if not plan:
            return None
        won = False
        for command in plan:
            if command not in played.admissible_commands:
                return None
            _, won = played.step(command)
        return tuple(plan) if won else None
    finally:
        played.close()
        planner.close()


def fitting_scenes(task_type: str, scenes: Sequence[int] | None = None) -> list[int]:
    """The scenes (FloorPlan numbers) a game of ``task_type`` can be generated in."""
    rng = random.Random(0)
    pool = assets.scenes() if scenes is None else scenes
    return [s for s in pool if s in assets.scenes() and _fits(_scene(s, rng), task_type)]


def _validate_request(task_type: str | None, scene: int | None) -> None:
    if task_type is not None and task_type not in assets.TASK_TYPES:
        raise InvalidConfig(f"alfworld: unknown task_type {task_type!r}; use one of: "
                            f"{', '.join(assets.TASK_TYPES)}")
    if scene is not None and scene not in assets.scenes():
        raise InvalidConfig(f"alfworld: no FloorPlan{scene} layout; scenes are 1-30 (kitchens), "
                            "201-230 (living rooms), 301-330 (bedrooms), 401-430 (bathrooms)")


@lru_cache(maxsize=256)
def generate(seed: int, task_type: str | None = None, scene: int | None = None,
             scenes: tuple[int, ...] | None = None) -> Game:
    """The game for ``seed`` (a random task type when ``task_type`` is None; a random fitting
    scene, from ``scenes`` if given, when ``scene`` is None). Deterministic; cached."""
    _validate_request(task_type, scene)
    rng = random.Random(f"adapt-alfworld-v1|{seed}|{task_type}|{scene}|{scenes}")
    kind = task_type or rng.choice(list(assets.TASK_TYPES))
    pool = fitting_scenes(kind, [scene] if scene is not None else scenes)
    if not pool:
        where = f"FloorPlan{scene}" if scene is not None else "the given scenes"
        raise InvalidConfig(f"alfworld: a {kind!r} task cannot be set in {where} (it needs "
                            f"{_needs(kind)}); leave scene out to pick a fitting one")
    for draft in range(MAX_DRAFTS):
        number = rng.choice(pool)
        sc = _scene(number, rng)
        task = _task(sc, kind, rng)
        objects = None if task is None else _place(sc, kind, task, rng)
        if task is None or objects is None:
            continue
        sentence = _sentence(kind, task, rng)
        grammar = assets.grammar().replace("UNKNOWN GOAL", sentence)
        problem = _problem(sc, kind, task, objects)
        document = {"pddl_domain": assets.domain(), "pddl_problem": problem, "grammar": grammar}
        planning = dict(document, pddl_problem=_problem(sc, kind, task, objects,
                                                        _relevant(sc, kind, task, objects)))
        walkthrough = solve(document, planning)
        if walkthrough is None:
            logger.debug("alfworld seed %s: draft %d (FloorPlan%d) not solvable", seed, draft,
                         number)
            continue
        return Game(pddl_domain=document["pddl_domain"], pddl_problem=problem, grammar=grammar,
                    task_type=kind, walkthrough=walkthrough,
                    source=f"generated seed={seed} task_type={kind} scene={number}",
                    scene=number)
    raise InvalidConfig(f"alfworld: no solvable {kind!r} game found for seed {seed} after "
                        f"{MAX_DRAFTS} drafts; try another seed")


def _needs(task_type: str) -> str:
    kinds = sorted(assets.constants().GOALS_VALID[assets.TASK_TYPES[task_type]])
    need = f"a {' or '.join(k.lower() for k in kinds)}"
    if task_type in APPLIANCE:
        need += f" with a {APPLIANCE[task_type].lower()}"
    if task_type == "examine":
        need += " with a lamp"
    return need
