"""Models a task may name for an environment: the simulator only where it can play, a
``script:`` model anywhere."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.api.apiutil import count_rows

SCRIPT = 'script:{"executor": ["answer 31"]}'


async def test_the_default_simulator_is_refused_for_another_environment(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    response = await client.post("/tasks", json={"environment": "calculator"})
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["errors"][0]["field"] == "executor.model"
    assert "no model given, and this server's default model" in problem["detail"]
    assert "plays only textcraft, not 'calculator'" in problem["detail"]
    assert "script:" in problem["detail"]
    assert await count_rows(app) == 0


async def test_a_named_simulator_is_refused_too(client: httpx.AsyncClient) -> None:
    response = await client.post("/tasks", json={
        "environment": "calculator", "executor": {"model": SCRIPT},
        "planner": {"model": "sim:textcraft?capability=2"}})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == "planner.model"


async def test_a_script_model_is_accepted_and_marked_simulated(
    client: httpx.AsyncClient
) -> None:
    response = await client.post("/tasks", json={"environment": "calculator",
                                                 "executor": {"model": SCRIPT}})
    assert response.status_code == 202, response.text
    task = response.json()
    assert task["models"]["executor"] == {"model": 'script:{"executor":["answer 31"]}',
                                          "simulated": True}
    assert task["simulated"] is True


async def test_a_script_file_is_refused_through_the_api(client: httpx.AsyncClient) -> None:
    response = await client.post("/tasks", json={"environment": "calculator",
                                                 "executor": {"model": "script:@/etc/passwd"}})
    assert response.status_code == 422, response.text
    assert "read only by the command line" in response.json()["detail"]
