"""Issue 14, item 4: `local:` model specs and config fields naming a server path are checked
at submit: the extra is installed, a bundled model or a file inside the operator's models
folder; paths only inside the operator's roots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.security.service import service
from tests.support.api import FakeDispatcher

pytest.importorskip("llama_cpp")

BASE: dict[str, Any] = {"environment": "textcraft", "environment_config": {"seed": 3}}


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "tiny.gguf").write_bytes(b"GGUF")
    (tmp_path / "outside.gguf").write_bytes(b"GGUF")
    (folder / "escape.gguf").symlink_to(tmp_path / "outside.gguf")
    return folder


@pytest.mark.parametrize(("spec", "ok"), [
    ("local:smollm2", True),
    ("local:smollm2?n_ctx=2048&threads=1", True),
    ("local:tiny.gguf", True),
    ("local:/etc/passwd", False),
    ("local:../outside.gguf", False),
    ("local:escape.gguf", False),  # a symlink out of the folder
    ("local:missing.gguf", False),
])
async def test_local_specs_are_checked_at_submit(database_url: str, models_dir: Path,
                                                 spec: str, ok: bool) -> None:
    async with service(database_url, broker_url="redis://127.0.0.1:1/0",
                       dispatcher=FakeDispatcher(), models_dir=str(models_dir)) as client:
        response = await client.post("/tasks", json={**BASE, "executor": {"model": spec}})
        if ok:
            assert response.status_code == 202, response.text
        else:
            assert response.status_code == 422, response.text
            problem = response.json()
            assert problem["errors"][0]["field"] == "executor.model"
            assert "smollm2" in problem["detail"] and str(models_dir) in problem["detail"]


async def test_without_a_models_folder_only_bundled_models_are_named(database_url: str) -> None:
    async with service(database_url, broker_url="redis://127.0.0.1:1/0",
                       dispatcher=FakeDispatcher()) as client:
        response = await client.post("/tasks", json={**BASE,
                                                     "planner": {"model": "local:/x/y.gguf"}})
        assert response.status_code == 422 and "ADAPT_MODELS_DIR" in response.text
        assert response.json()["errors"][0]["field"] == "planner.model"


@pytest.mark.parametrize("field", ["game_path", "data_dir"])
async def test_alfworld_paths_only_inside_the_operators_roots(
    database_url: str, tmp_path: Path, field: str
) -> None:
    root = tmp_path / "alfworld"
    (root / "game").mkdir(parents=True)
    # a model that may play ALFWorld (the simulator plays TextCraft only): the paths decide
    script = {"model": 'script:["look"]'}
    inside = {"environment": "alfworld", "environment_config": {field: str(root / "game")},
              "executor": script}
    if field == "data_dir":
        inside["environment_config"]["split"] = "valid_seen"
    outside = {"environment": "alfworld", "executor": script,
               "environment_config": {**inside["environment_config"], field: "/etc"}}
    async with service(database_url, broker_url="redis://127.0.0.1:1/0",
                       dispatcher=FakeDispatcher()) as client:
        response = await client.post("/tasks", json=inside)  # no roots configured
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["field"] == f"environment_config.{field}"
        assert "ADAPT_PATH_ROOTS" in response.text
    async with service(database_url, broker_url="redis://127.0.0.1:1/0",
                       dispatcher=FakeDispatcher(), path_roots=[str(root)]) as client:
        refused = await client.post("/tasks", json=outside)
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["field"] == f"environment_config.{field}"
        sneaky = {"environment": "alfworld", "executor": script, "environment_config": {
            **inside["environment_config"], field: str(root / ".." / "..")}}
        escaped = await client.post("/tasks", json=sneaky)
        assert escaped.status_code == 422, escaped.text
        assert escaped.json()["errors"][0]["field"] == f"environment_config.{field}"
        accepted = await client.post("/tasks", json=inside)
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["environment_config"][field] == str((root / "game").resolve())
