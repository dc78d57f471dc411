"""``script:`` models: the spec, how answers are chosen, resume, and where files may be read."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.calculator import Calculator
from adapt.errors import ModelSpecError
from adapt.llm.base import ChatRequest, ChatResponse
from adapt.llm.recording import RecordedCall, Recording, ReplayModel, request_fingerprint
from adapt.llm.retry import RetryBudget, RetryingModel
from adapt.llm.script import ScriptModel, last_observation, parse_script
from adapt.llm.spec import load_model, parse_model_spec
from adapt.service.model_factory import ModelFactory, check_plays
from adapt.settings import Settings


def executor(prompt: str) -> ChatRequest:
    return ChatRequest(prompt=prompt, role="executor")


def planner(prompt: str = "plan it") -> ChatRequest:
    return ChatRequest(prompt=prompt, role="planner")


def answers(model: ScriptModel, *requests: ChatRequest) -> list[str]:
    return [asyncio.run(model.complete(r)).text for r in requests]


def test_the_spec_is_canonical_json_and_a_list_means_executor_answers() -> None:
    spec = parse_model_spec('script: ["look",  "think: Task completed!"] ')
    assert str(spec) == 'script:{"executor":["look","think: Task completed!"]}'
    assert spec.simulated
    assert str(parse_model_spec(str(spec))) == str(spec)


@pytest.mark.parametrize(("text", "says"), [
    ("script:", "not valid JSON"),
    ("script:{nope", "not valid JSON"),
    ('script:{"executr": ["look"]}', "executr: Extra inputs are not permitted"),
    ('script:{"rules": [{"when": "(", "then": "x"}]}', "rules.0.when"),
    ('script:{"executor": [1]}', "executor.0"),
    ("script:{}", "empty script"),
])
def test_a_bad_script_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ModelSpecError, match=r"e\.g\. script:") as caught:
        parse_model_spec(text)
    assert says in str(caught.value)


def test_answers_come_in_order_per_role_then_the_model_gives_up() -> None:
    model = ScriptModel(parse_script('{"executor": ["look", "open"], "planner": ["Step 1: a"]}'))
    assert answers(model, executor("> "), planner(), executor("> "), executor("> "),
                   planner()) == [
        "look", "Step 1: a", "open",
        "think: The script has no answer left for this step. Task failed!",
        "The script has no plan left."]


def test_rules_match_the_last_observation_first() -> None:
    model = ScriptModel(parse_script(
        '{"executor": ["inventory"], "rules": [{"when": "^You see: a key", "then": "take key"},'
        ' {"when": "door is locked", "then": "unlock door"}]}'))
    example = "Example:\n> look\nYou see: a key.\n> take key\nTaken.\n\nYour task: open it.\n> "
    # the example's "You see" is before the prompt's last action line: no rule, the list
    assert answers(model, executor(example)) == ["inventory"]
    prompt = example + "inventory\nYou carry nothing.\n> look\nYou see: a key.\n> "
    assert answers(model, executor(prompt)) == ["take key"]
    prompt += "take key\nThe door is locked.\n> "
    assert answers(model, executor(prompt)) == ["unlock door"]


def test_last_observation() -> None:
    assert last_observation("task\n> look\nA room.\nExits: north.\n> ") == "A room.\nExits: north.\n"
    assert last_observation("just a task\n") == "just a task\n"


def test_a_whole_task_runs_offline_in_an_environment_the_simulator_cannot_play() -> None:
    model = load_model('script:{"executor": ["think: Too much at once. Task failed!", '
                       '"calculator 3 * 12 - 5", "think: I have 31. Task completed!", '
                       '"answer 31"], "planner": ["Step 1: compute the apples left\\n'
                       'Step 2: answer it\\nExecution Order: (Step 1 AND Step 2)"]}')
    sink = MemorySink()
    result = asyncio.run(run_task(Calculator(), {"index": 0}, RunConfig(d_max=2), model,
                                  sink=sink))
    tree = sink.tree()["tree"]
    assert [c["goal"] for c in tree["children"]] == ["compute the apples left", "answer it"]
    assert result.status == "succeeded", result


def test_a_resumed_task_continues_the_script_where_the_recording_stopped() -> None:
    script = parse_script('{"executor": ["look", "take key", "open"], '
                          '"rules": [{"when": "locked", "then": "unlock"}]}')
    first = ScriptModel(script)
    asked = [executor("t\n> "), executor("t\n> look\nThe door is locked.\n> "),
             executor("t\n> look\nA key.\n> ")]
    said = [asyncio.run(first.complete(r)) for r in asked]
    assert [r.text for r in said] == ["look", "unlock", "take key"]
    recording = Recording(calls=[
        RecordedCall(index=i, fingerprint=request_fingerprint(r), request=r, response=s)
        for i, (r, s) in enumerate(zip(asked, said, strict=True))])
    # the live model as the service wraps it (retries): the wrapper passes the news on
    live = RetryingModel(ScriptModel(script), RetryBudget(3))
    resumed = ReplayModel(recording, live=live)
    replies = [asyncio.run(resumed.complete(r)).text for r in [*asked, executor("t\n> ")]]
    assert replies == ["look", "unlock", "take key", "open"]
    assert resumed.replayed == 3 and resumed.live_calls == 1


def test_script_files_are_read_on_the_command_line_only(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('["look"]')
    spec = f"script:@{path}"
    operator = ModelFactory(Settings(), operator=True)
    assert operator.check(spec).simulated
    model = operator.build(spec)
    assert asyncio.run(model.complete(executor("> "))).text == "look"
    with pytest.raises(ModelSpecError, match="read only by the command line"):
        ModelFactory(Settings()).check(spec)
    with pytest.raises(ModelSpecError, match="cannot read the script file"):
        operator.check(f"script:@{tmp_path / 'missing.json'}")


@pytest.mark.parametrize("spec", ["sim:textcraft?capability=1",
                                  "openai:sim:textcraft@http://127.0.0.1:8001/v1"])
def test_the_simulator_is_refused_for_an_environment_it_cannot_play(spec: str) -> None:
    check_plays(spec, "textcraft")
    with pytest.raises(ModelSpecError) as caught:
        check_plays(spec, "calculator")
    message = str(caught.value)
    assert "plays only textcraft, not 'calculator'" in message
    assert "script:" in message
    check_plays('script:["x"]', "calculator")
    check_plays("openai:gpt-4o-mini", "calculator")


def test_replies_are_priced_at_nothing_and_marked_simulated() -> None:
    model = ScriptModel(parse_script('["look"]'))
    reply: ChatResponse = asyncio.run(model.complete(executor("x" * 400)))
    assert reply.simulated and reply.usage.estimated and reply.usage.prompt_tokens == 100
