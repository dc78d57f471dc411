"""What the viewer needs from the API: tasks found by a short id (compare accepts any unique
prefix), and the server's default model in the catalogue (the new-task form says it)."""

from __future__ import annotations

import httpx

from adapt.settings import SIM_DEFAULT_MODEL
from tests.api.apiutil import create


async def test_tasks_are_found_by_an_id_prefix(client: httpx.AsyncClient) -> None:
    ids = [(await create(client))["id"] for _ in range(3)]
    for task_id in ids:
        page = (await client.get("/tasks", params={"id_prefix": task_id[:10]})).json()
        assert [t["id"] for t in page["items"]] == [task_id]
    one_digit = (await client.get("/tasks", params={"id_prefix": ids[0][:1]})).json()
    assert ids[0] in [t["id"] for t in one_digit["items"]]
    assert (await client.get("/tasks", params={"id_prefix": "zz%"})).status_code == 422


async def test_the_catalogue_names_the_default_model(client: httpx.AsyncClient) -> None:
    info = (await client.get("/environments")).json()
    assert info["default_model"] == {"model": SIM_DEFAULT_MODEL, "simulated": True,
                                     "environments": ["textcraft"]}
