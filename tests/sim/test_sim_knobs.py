"""Knobs (mistakes, malformed output, false success), determinism, usage, spec strings."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapt.errors import ModelSpecError, UserError
from adapt.llm.base import ChatRequest, ChatResponse
from adapt.sim import SimTextCraftModel, available_simulators, from_spec
from tests.sim.minicraft import BEEHIVE, BOOKS, PLANKS, MiniCraft, build_prompt, play


def respond(model: SimTextCraftModel, prompt: str, **kwargs: object) -> ChatResponse:
    return asyncio.run(model.complete(ChatRequest(prompt=prompt, **kwargs)))


GAME = MiniCraft(BOOKS, "craft bookshelf", PLANKS)
#: executor prompts at several points of an error-free run
EXECUTOR_PROMPTS = [
    build_prompt(GAME.task_observation(), "", steps)
    for steps in (
        [],
        [("get 2 oak logs", "Got 2 oak logs")],
        [
            ("get 2 oak logs", "Got 2 oak logs"),
            ("get 9 sugar cane", "Got 9 sugar cane"),
            ("get 3 leather", "Got 3 leather"),
        ],
    )
]
PLANNER_PROMPT = build_prompt(GAME.task_observation("craft 13 stick"), "", executor=False)


def test_deterministic_per_prompt_and_seed() -> None:
    for seed in range(5):
        a = SimTextCraftModel(capability=3, error_rate=0.5, format_error_rate=0.3, seed=seed)
        b = SimTextCraftModel(capability=3, error_rate=0.5, format_error_rate=0.3, seed=seed)
        for prompt in [*EXECUTOR_PROMPTS, PLANNER_PROMPT]:
            assert respond(a, prompt).text == respond(b, prompt).text == respond(a, prompt).text


def test_error_rate_produces_mistakes_across_seeds() -> None:
    clean = SimTextCraftModel(capability=3)
    for prompt in EXECUTOR_PROMPTS:
        expected = respond(clean, prompt).text
        outputs = [
            respond(SimTextCraftModel(capability=3, error_rate=0.3, seed=s), prompt).text
            for s in range(60)
        ]
        mistakes = [o for o in outputs if o != expected]
        assert 5 <= len(mistakes) <= 35, (expected, mistakes)
        assert all(not o.startswith("think:") for o in mistakes)
    # error_rate 0 never deviates, whatever the seed
    for s in range(20):
        assert respond(SimTextCraftModel(capability=3, seed=s), EXECUTOR_PROMPTS[1]).text == (
            respond(clean, EXECUTOR_PROMPTS[1]).text
        )


def test_mistake_kinds() -> None:
    prompt = EXECUTOR_PROMPTS[1]  # next: get 9 sugar cane; a craft is pending
    seen = {
        respond(SimTextCraftModel(capability=3, error_rate=1.0, seed=s), prompt).text
        for s in range(40)
    }
    assert "get 8 sugar cane" in seen  # fetching one too few
    assert any(o.startswith("craft ") for o in seen)  # crafting before fetching
    crafting = EXECUTOR_PROMPTS[2]  # next: craft 4 oak planks using 1 oak logs
    wrong = respond(SimTextCraftModel(capability=3, error_rate=1.0), crafting).text
    assert wrong == "craft 4 oak planks using 2 oak logs"
    beehive = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    fetch = build_prompt(beehive.task_observation("fetch 2 planks"), "Inventory: [oak logs] (1) ")
    seen = {respond(SimTextCraftModel(error_rate=1.0, seed=s), fetch).text for s in range(20)}
    assert seen  # no get is pending here: the craft can only get its count wrong
    assert seen <= {"craft 4 oak planks using 2 oak logs"}


def test_category_in_get_mistake() -> None:
    commands = [
        "craft 1 white bed using 3 wool, 3 planks",
        "craft 4 oak planks using 1 oak logs",
        "craft 1 white banner using 6 white wool, 1 stick",
    ]
    game = MiniCraft(commands, "craft white bed", PLANKS | {"wool": {"white wool"}})
    prompt = build_prompt(
        game.task_observation("craft 1 white bed using 3 wool, 3 planks"),
        "Inventory: [oak planks] (3) ",
    )
    assert respond(SimTextCraftModel(), prompt).text == "get 3 white wool"
    outputs = {respond(SimTextCraftModel(error_rate=1.0, seed=s), prompt).text for s in range(30)}
    assert outputs == {
        "get 3 wool",  # a category instead of a concrete item
        "get 2 white wool",  # one too few
        "craft 1 white bed using 3 white wool, 3 oak planks",  # crafting before fetching
    }
    # and the model recovers from the category mistake
    trajectory = [("get 3 wool", "Could not find wool")]
    recovered = build_prompt(
        game.task_observation("craft 1 white bed using 3 wool, 3 planks"),
        "Inventory: [oak planks] (3) ",
        trajectory,
    )
    assert respond(SimTextCraftModel(), recovered).text == "get 3 white wool"


def test_errors_cost_steps_but_are_recovered() -> None:
    clean = play(
        SimTextCraftModel(capability=3),
        GAME.task_observation(),
        MiniCraft(BOOKS, "craft bookshelf", PLANKS).step,
    )
    assert clean.reward == 1.0
    solved, with_failures = 0, 0
    for seed in range(40):
        game = MiniCraft(BOOKS, "craft bookshelf", PLANKS)
        model = SimTextCraftModel(capability=3, error_rate=0.1, seed=seed)
        episode = play(model, game.task_observation(), game.step)
        failures = sum(obs.startswith("Could not") for _, obs in episode.steps)
        with_failures += failures > 0
        solved += episode.reward == 1.0
        if failures and episode.reward == 1.0:
            assert len(episode.steps) > len(clean.steps)
    assert with_failures >= 10
    assert solved >= 32


def test_format_errors() -> None:
    executor = {
        respond(
            SimTextCraftModel(capability=3, format_error_rate=1.0, seed=s), EXECUTOR_PROMPTS[1]
        ).text
        for s in range(20)
    }
    assert "get 9 sugar cane get 3 leather" in executor
    assert "> get 9 sugar cane" in executor
    plans = [
        respond(SimTextCraftModel(format_error_rate=1.0, seed=s), PLANNER_PROMPT).text
        for s in range(20)
    ]
    assert any("Execution Order:" not in p for p in plans)
    unlabeled = [p for p in plans if "Execution Order:" in p]
    assert unlabeled and all(
        any(line.startswith(("fetch ", "craft ")) for line in p.splitlines()) for p in unlabeled
    )
    clean = respond(SimTextCraftModel(), PLANNER_PROMPT).text
    assert "Execution Order:" in clean
    assert not any(line.startswith(("fetch", "craft")) for line in clean.splitlines())


def test_false_success() -> None:
    model = SimTextCraftModel(capability=3, false_success_rate=1.0)
    assert "Task completed!" in respond(model, EXECUTOR_PROMPTS[0]).text
    claims = sum(
        "Task completed!"
        in respond(
            SimTextCraftModel(capability=3, false_success_rate=0.2, seed=s), EXECUTOR_PROMPTS[0]
        ).text
        for s in range(100)
    )
    assert 8 <= claims <= 35


def test_planner_mistakes_are_count_mistakes() -> None:
    clean = respond(SimTextCraftModel(), PLANNER_PROMPT).text
    plans = {
        respond(SimTextCraftModel(error_rate=1.0, seed=s), PLANNER_PROMPT).text for s in range(20)
    }
    assert clean not in plans
    fetches = {line for p in plans for line in p.splitlines() if "fetch" in line}
    assert "Step 1: fetch 2 oak planks" in fetches  # amounts not multiplied by 4 crafts
    step_lists = [[line for line in p.splitlines() if line.startswith("Step")] for p in plans]
    assert any(sum("craft 4 stick" in line for line in s) == 3 for s in step_lists)  # one short


def test_temperature_perturbs_deterministically() -> None:
    prompt = EXECUTOR_PROMPTS[1]

    def out(seed: int, temperature: float) -> str:
        model = SimTextCraftModel(capability=3, error_rate=0.3, seed=seed)
        return respond(model, prompt, temperature=temperature).text

    assert all(out(s, 0.7) == out(s, 0.7) for s in range(10))
    assert [out(s, 0.0) for s in range(40)] != [out(s, 0.7) for s in range(40)]


def test_usage_is_estimated_from_length() -> None:
    response = respond(SimTextCraftModel(), EXECUTOR_PROMPTS[0])
    assert response.usage.estimated
    assert response.usage.prompt_tokens == math.ceil(len(EXECUTOR_PROMPTS[0]) / 4)
    assert response.usage.completion_tokens == math.ceil(len(response.text) / 4)
    assert response.simulated and response.model == SimTextCraftModel().name
    assert response.latency_s < 0.5


def test_stop_and_max_tokens() -> None:
    model = SimTextCraftModel()
    full = respond(model, PLANNER_PROMPT)
    assert full.finish_reason == "stop" and "\n" in full.text
    first = respond(model, PLANNER_PROMPT, stop=["\n"])
    assert first.text == full.text.split("\n")[0] and first.finish_reason == "stop"
    short = respond(model, PLANNER_PROMPT, max_tokens=3)
    assert short.text == full.text[:12] and short.finish_reason == "length"


# -- spec strings ------------------------------------------------------------------------------
def test_from_spec() -> None:
    model = from_spec("sim:textcraft?capability=1&error_rate=0.1&seed=7")
    assert isinstance(model, SimTextCraftModel)
    assert model.name == "sim:textcraft?capability=1&error_rate=0.1&seed=7"
    assert from_spec("textcraft?capability=2").name == (
        "sim:textcraft?capability=2&error_rate=0&seed=0"
    )
    assert from_spec("sim:textcraft").name == SimTextCraftModel().name
    odd = from_spec(" SIM:TextCraft?seed=3&format_error_rate=0.25&false_success_rate=1 ")
    assert odd.name == (
        "sim:textcraft?capability=1&error_rate=0&false_success_rate=1&format_error_rate=0.25&seed=3"
    )
    assert from_spec(odd.name).name == odd.name  # canonical names round-trip
    assert available_simulators() == ["textcraft"]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("sim:nope?capability=1", ["unknown simulator 'nope'", "textcraft"]),
        ("sim:textcraft?capability=0", ["capability", "valid knobs", "error_rate"]),
        ("sim:textcraft?capability=1.5", ["capability", "integer"]),
        ("sim:textcraft?capability=two", ["capability", "integer"]),
        ("sim:textcraft?error_rate=1.5", ["error_rate", "between 0 and 1"]),
        ("sim:textcraft?error_rate=nan", ["error_rate"]),
        ("sim:textcraft?temperature=1", ["unknown knob 'temperature'", "capability", "seed"]),
        ("sim:textcraft?seed", ["seed", "value"]),
        ("sim:textcraft?seed=", ["seed", "value"]),
        ("sim:textcraft?seed=1&seed=2", ["seed", "twice"]),
        ("", ["empty"]),
    ],
)
def test_bad_specs(spec: str, words: list[str]) -> None:
    with pytest.raises(ModelSpecError) as info:
        from_spec(spec)
    assert isinstance(info.value, UserError)
    for word in words:
        assert word in str(info.value)


def test_constructor_validates_knobs() -> None:
    with pytest.raises(ModelSpecError, match="format_error_rate"):
        SimTextCraftModel(format_error_rate=-0.1)
    with pytest.raises(ModelSpecError, match="capability"):
        SimTextCraftModel(capability=True)


def test_import_does_not_pull_web_frameworks() -> None:
    code = (
        "import sys, adapt.sim; "
        "bad = [m for m in ('fastapi', 'sqlalchemy', 'celery', 'redis', 'starlette', 'uvicorn') "
        "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_outputs_do_not_depend_on_the_hash_seed() -> None:
    code = (
        "import asyncio, json\n"
        "from adapt.llm.base import ChatRequest\n"
        "from adapt.sim import from_spec\n"
        "from tests.sim.test_sim_knobs import EXECUTOR_PROMPTS, PLANNER_PROMPT\n"
        "out = []\n"
        "for seed in range(8):\n"
        "    m = from_spec(f'sim:textcraft?capability=3&error_rate=0.5&format_error_rate=0.3"
        "&false_success_rate=0.1&seed={seed}')\n"
        "    for p in [*EXECUTOR_PROMPTS, PLANNER_PROMPT]:\n"
        "        out.append(asyncio.run(m.complete(ChatRequest(prompt=p, temperature=0.5))).text)\n"
        "print(json.dumps(out))\n"
    )
    outputs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
            cwd=Path(__file__).resolve().parents[2],
        ).stdout
        for hash_seed in (1, 2)
    ]
    assert outputs[0] == outputs[1] and len(outputs[0]) > 100
