"""ADaPT on a generated ALFWorld game through the service (API + embedded worker, SQLite),
with scripted models: the tree and the household observations come back over the API."""

from __future__ import annotations

import re

import httpx
import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")
pytest.importorskip("workers.dispatchers")

from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel
from adapt.service.execute import ServiceContext
from adapt.settings import Settings
from api.main import create_app
from tests.api.apiutil import parse_sse

GAME = {"seed": 902, "task_type": "clean"}  # a bathroom: "put a clean soapbar in toilet"
PLAN = ("Step 1: find and take a soapbar\n"
        "Step 2: clean the soapbar with the sinkbasin\n"
        "Step 3: put the clean soapbar in the toilet\n"
        "Execution Order: (Step 1 AND Step 2 AND Step 3)")
#: what the scripted executor does for each goal
SCRIPTS = {
    "put a clean soapbar in toilet": ["think: This needs several skills. Task failed!"],
    "find and take a soapbar": ["go to sinkbasin 1", "take soapbar 2 from sinkbasin 1",
                                "think: I hold the soapbar 2. Task completed!"],
    "clean the soapbar with the sinkbasin": ["clean soapbar 2 with sinkbasin 1",
                                             "think: The soapbar 2 is clean. Task completed!"],
    "put the clean soapbar in the toilet": ["go to toilet 1", "put soapbar 2 in/on toilet 1"],
}
_TASK = re.compile(r"Your task is to: (.+?)\.\n")


def policy(request: ChatRequest) -> str:
    prompt = request.as_prompt()
    if request.role == "planner":
        return PLAN
    *_, current = _TASK.finditer(prompt)  # the last task in the prompt is the current one
    goal, tail = current.group(1), prompt[current.end():]
    if "current inventory:" in tail:  # skip the propagated context
        tail = tail.split("current inventory:", 1)[1].split("\n", 1)[1]
    done = tail.count("\n> ") + tail.startswith("> ") - 1  # minus the final "> " cue
    if goal == "clean the soapbar with the sinkbasin" and "current inventory: soapbar 2" not in (
            prompt[current.end():]):
        return "think: I do not know which soapbar I hold. Task failed!"
    script = SCRIPTS[goal]
    return script[done] if done < len(script) else "think: Task failed!"


async def test_adapt_on_a_generated_game_through_the_service(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = FunctionModel(policy, name="scripted-alfworld")
    monkeypatch.setattr(ServiceContext, "load_model", lambda self, spec: model)
    app = create_app(Settings.model_validate({"ADAPT_DATABASE_URL": sqlite_url}))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            environments = (await client.get("/environments")).json()
            assert "alfworld" in str(environments)
            created = await client.post("/tasks", json={
                "environment": "alfworld", "environment_config": GAME, "strategy": "adapt",
                "d_max": 2,  # a script: model passes the submission's checks; load_model
                "executor": {"model": 'script:["look"]'}})  # gives the scripted policy
            assert created.status_code == 202, created.text
            task_id = created.json()["id"]
            stream = await client.get(f"/tasks/{task_id}/events")  # ends with task.finished
            events, _ = parse_sse(stream.text)
            assert events[-1].event == "task.finished"
            task = (await client.get(f"/tasks/{task_id}")).json()
            assert task["status"] == "succeeded", task
            tree = (await client.get(f"/tasks/{task_id}/tree")).json()
            root = tree["tree"]
            assert root["goal"] == "put a clean soapbar in toilet" and root["success"]
            assert root["executor_success"] is False  # the executor gave up, ADaPT planned
            leaves = [n for child in root["children"] for n in [child, *child["children"]]
                      if n["kind"] == "task"]
            assert [n["goal"] for n in leaves] == list(SCRIPTS)[1:]
            assert all(n["status"] == "succeeded" for n in leaves)
            observations = []
            for node in leaves:
                detail = (await client.get(f"/tasks/{task_id}/nodes/{node['id']}")).json()
                observations += [s["observation"] for s in detail["steps"]]
    assert "You pick up the soapbar 2 from the sinkbasin 1." in observations
    assert "You clean the soapbar 2 using the sinkbasin 1." in observations
    assert observations[-1] == "You move the soapbar 2 to the toilet 1."
    # context propagation: the clean step saw which soapbar was picked up where
    clean_prompts = [r.as_prompt() for r in model.requests if r.role == "executor"
                     and "Your task is to: clean the soapbar with the sinkbasin." in r.as_prompt()]
    assert clean_prompts and all("> take soapbar 2 from sinkbasin 1\nYou pick up the soapbar 2 "
                                 "from the sinkbasin 1." in p for p in clean_prompts)
