"""``executor.models`` through the API (issue 17): validation as problem details naming the
field, the canonical cascade stored in the run config, and each attempt a node of the tree."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.security.service import run_to_end, service

WEAK = "sim:textcraft?capability=1"
STRONG = "sim:textcraft?capability=3"
BODY: dict[str, Any] = {"environment": "textcraft",
                        "environment_config": {"goal": "activator rail"}, "d_max": 2}


@pytest.mark.parametrize(("executor", "field", "message"), [
    ({"model": WEAK, "models": [WEAK, STRONG]}, "executor.models", "not both"),
    ({"models": [WEAK, WEAK]}, "executor.models", "listed twice"),
    ({"models": [WEAK, "sim:nosuch"]}, "executor.models.1", "nosuch"),
    ({"models": [WEAK, "bogus"]}, "executor.models.1", "backend"),
    ({"models": [WEAK, 3]}, "executor.models.1", "string"),
    ({"models": [WEAK] + [f"{WEAK}&seed={i}" for i in range(8)]}, "executor.models",
     "at most 8"),
    ({"cascade": "later"}, "executor.cascade", "'before' or 'after'"),
])
async def test_bad_cascades_are_422_problems_naming_the_field(
        client: httpx.AsyncClient, executor: dict[str, Any], field: str, message: str) -> None:
    response = await client.post("/tasks", json={**BODY, "executor": executor})
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["type"] == "urn:adapt:problem:validation-error"
    assert problem["errors"][0]["field"] == field, problem
    assert message in problem["detail"], problem
    assert (await client.get("/tasks")).json()["items"] == []


async def test_a_cascade_runs_and_every_attempt_is_a_node_of_the_tree(database_url: str) -> None:
    body = {**BODY, "executor": {"models": ["sim:textcraft?seed=0&capability=1", STRONG]},
            "planner": {"model": WEAK}}
    async with service(database_url) as client:
        task = await run_to_end(client, body)
        tree = (await client.get(f"/tasks/{task['id']}/tree")).json()["tree"]
    assert task["status"] == "succeeded"
    # stored as given; the first model is the task's executor model
    models = task["run_config"]["executor"]["models"]
    assert models == body["executor"]["models"]  # type: ignore[index]
    assert task["models"]["executor"]["model"] == models[0]
    assert task["run_config"]["executor"]["cascade"] == "before"
    first, second = tree["children"]
    # the labels name the models as they call themselves (the simulator's canonical spec)
    assert first["label"] == f"attempt 1: {WEAK}&error_rate=0&seed=0"
    assert second["label"] == f"attempt 2: {STRONG}&error_rate=0&seed=0"
    assert (first["status"], second["status"]) == ("failed", "succeeded")
    for node in (first, second):  # claim vs verdict on every attempt
        assert node["verdict"] in ("confirmed", "refuted") and node["claim"] is not None
