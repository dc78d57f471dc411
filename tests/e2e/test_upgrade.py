"""An upgrade while tasks run, in the documented order (docs/operations.md): the previous
release's API and worker run tasks on PostgreSQL; the new code migrates the database under them;
the old worker runs tasks the old API takes on the new schema; every old worker is stopped (it
hands its tasks back) before the first new one starts, as an upgrade from 0.2.0 or 0.1.0 must
(an old worker cannot read what a new one writes since 0020), and a task the old API takes
meanwhile waits queued; the new worker resumes them all; then the new API takes tasks. Every
task finishes with the tree of an undisturbed run, and no call is paid twice. (A worker of the
release before that finds a config only a newer API stores hands the task back from 0.2.0 on:
tests/service/test_stored_configs.py; 0.1.0's would fail it, hence workers before the API.)

The previous release is the newest ``v*`` tag merged into HEAD (not HEAD itself), checked out
into a temporary git worktree; ``ADAPT_UPGRADE_FROM`` names another commit to start from (e.g.
before the first release is tagged). Its processes run from that worktree (``PYTHONPATH``) with
this environment's dependencies, when they satisfy the previous release's requirements (one
virtualenv per release would take minutes to install); otherwise the test is skipped, saying
which requirement is not met. Without a tag, the newest release commit CHANGELOG.md names is
used (a clone may come without tags; a shallow one without that commit skips); with neither it
is skipped. Under ``CI=true`` a previous release that is there but cannot be checked out fails.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Awaitable, Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import httpx
import pytest
from packaging.requirements import Requirement

from adapt.engine.tree import FINAL_STATUSES
from adapt.store.db import create_engine, session_factory
from tests.chaos.scenarios import reference
from tests.service.helpers import persisted_tree
from tests.support.databases import postgres_database
from tests.support.simserver import start_sim_server, stop_sim_server
from tests.support.workers import (
    BROKER_URL,
    ROOT,
    Workers,
    http_spec,
    persisted_prompt_hashes,
    sim_prompt_hashes,
)

pytestmark = pytest.mark.slow

SEEDS_BEFORE = [101, 102, 103, 104]  # submitted to the old API, before the migration
SEEDS_BESIDE = [105, 106]  # to the old API after it, run by the old worker on the new schema
SEEDS_BETWEEN = [108]  # to the old API while no worker runs: it waits queued for a new one
SEEDS_AFTER = [107]  # to the new API, once the old workers are gone


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True, timeout=120).stdout.strip()


def changelog_releases() -> list[str]:
    """The commits CHANGELOG.md names for its releases, newest first (a clone may come without
    the tags: ``## [0.1.0] ...`` followed by ``commit <sha>``)."""
    text = (ROOT / "CHANGELOG.md").read_text()
    commits = []
    for section in re.split(r"^## \[", text, flags=re.M)[1:]:
        found = re.search(r"\bcommit ([0-9a-f]{40})\b", section)
        if found:
            commits.append(found.group(1))
    return commits


def previous_release() -> str | None:
    """The commit to upgrade from: ``ADAPT_UPGRADE_FROM``, or the newest release tag merged
    into HEAD that is not HEAD itself, or else the newest release commit CHANGELOG.md names
    (None: there is none)."""
    chosen = os.environ.get("ADAPT_UPGRADE_FROM")
    if chosen:
        return chosen
    try:
        head = git("rev-parse", "HEAD")
        tags = git("tag", "--list", "v*", "--merged", "HEAD", "--sort=-v:refname").split()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None
    for tag in tags:
        if git("rev-list", "-n", "1", tag) != head:
            return tag
    for commit in changelog_releases():
        if commit != head:
            return commit
    return None


@pytest.fixture
def old_release(tmp_path: Path) -> Iterator[Path]:
    """The previous release, checked out into a temporary worktree."""
    release = previous_release()
    if release is None:
        pytest.skip("no previous release (a v* tag, or a commit CHANGELOG.md names); set "
                    "ADAPT_UPGRADE_FROM=<commit> to run the upgrade from any commit")
    try:
        git("cat-file", "-e", f"{release}^{{commit}}")
    except subprocess.CalledProcessError:
        pytest.skip(f"the previous release {release} is not in this clone (a shallow one?)")
    where = tmp_path / "previous"
    try:
        git("worktree", "add", "--detach", str(where), release)
    except subprocess.CalledProcessError as exc:
        message = f"could not check out {release}: {exc.stderr}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        unmet = unmet_requirements(where)
        if unmet:
            pytest.skip(f"{release} needs {', '.join(unmet)}, which this environment lacks")
        yield where
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT,
                       capture_output=True, timeout=120)


def unmet_requirements(checkout: Path) -> list[str]:
    project = tomllib.loads((checkout / "pyproject.toml").read_text())["project"]
    unmet = []
    for line in project.get("dependencies", []):
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            installed = version(req.name)
        except PackageNotFoundError:
            unmet.append(line)
            continue
        if req.specifier and not req.specifier.contains(installed, prereleases=True):
            unmet.append(f"{line} (installed: {installed})")
    return unmet


class Release:
    """The processes of one checkout (its ``adapt`` on ``PYTHONPATH``)."""

    def __init__(self, root: Path, env: dict[str, str], logs: Path, name: str) -> None:
        self.root, self.env, self.logs, self.name = root, env, logs, name
        self.procs: list[subprocess.Popen[bytes]] = []

    def environ(self) -> dict[str, str]:
        return {**os.environ, **self.env, "PYTHONPATH": str(self.root)}

    def run(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "adapt.cli", *args], cwd=self.root,
                              env=self.environ(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{self.name}: adapt {' '.join(args)}: {done.stderr}"
        return done.stdout + done.stderr

    def where(self) -> str:
        return subprocess.run([sys.executable, "-c", "import adapt; print(adapt.__file__)"],
                              cwd=self.root, env=self.environ(), capture_output=True,
                              text=True, check=True).stdout.strip()

    def serve(self, port: int) -> str:
        log = (self.logs / f"{self.name}-api.log").open("wb")
        self.procs.append(subprocess.Popen(
            [sys.executable, "-m", "adapt.cli", "serve", "--port", str(port)], cwd=self.root,
            env=self.environ(), stdout=log, stderr=subprocess.STDOUT))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert self.procs[-1].poll() is None, (self.logs / f"{self.name}-api.log").read_text()
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"{self.name}'s API did not start"
            time.sleep(0.2)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()


def submit(api: str, spec: str, seeds: list[int]) -> list[str]:
    ids = []
    for seed in seeds:
        answer = httpx.post(f"{api}/tasks", json={
            "environment": "textcraft", "environment_config": {"seed": seed}, "d_max": 4,
            "executor": {"model": spec}, "planner": {"model": spec}}, timeout=30)
        assert answer.status_code == 202, answer.text
        ids.append(answer.json()["id"])
    return ids


async def calls_recorded(sessions: Any) -> int:
    from sqlalchemy import func, select

    from adapt.store.models import LLMCallRow

    async with sessions() as s:
        return int((await s.execute(select(func.count()).select_from(LLMCallRow))).scalar_one())


async def wait_calls(sessions: Any, n: int, timeout: float = 120,
                     done: Callable[[], Awaitable[bool]] | None = None) -> None:
    """Until ``n`` calls are recorded (or ``done`` says there is no need)."""
    deadline = time.monotonic() + timeout
    while await calls_recorded(sessions) < n:
        if done is not None and await done():
            return
        assert time.monotonic() < deadline, f"fewer than {n} calls after {timeout}s"
        await asyncio.sleep(0.1)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_upgrade_while_tasks_run(old_release: Path, tmp_path: Path) -> None:
    sim = start_sim_server(latency=0.6)  # tasks outlast the migration
    queue = f"adapt-upgrade-{uuid.uuid4().hex[:10]}"
    with postgres_database(migrate=False) as url:
        env = {"ADAPT_DATABASE_URL": url, "ADAPT_BROKER_URL": BROKER_URL,
               "ADAPT_CELERY_QUEUE": queue, "ADAPT_LLM_ENDPOINTS": f'["{sim.base_url}"]',
               "ADAPT_ALLOW_REMOTE_LLM": "0"}
        old = Release(old_release, env, tmp_path, "old")
        new = Release(ROOT, env, tmp_path, "new")
        assert old.where().startswith(str(old_release)) and new.where().startswith(str(ROOT))
        workers = Workers(url, queue, tmp_path, broker_url=BROKER_URL)
        engine = create_engine(url, pool_size=2)
        sessions = session_factory(engine)
        settings = {"llm_endpoints": [sim.base_url], "lease_seconds": 5,
                    "heartbeat_seconds": 1, "sweep_seconds": 1}
        try:
            old.run("db", "upgrade")  # the previous release's schema
            old_worker = workers.start(root=old_release, concurrency=8, **settings)
            old_worker.wait_ready()
            old_api = old.serve(free_port())
            ids = submit(old_api, http_spec(sim.base_url), SEEDS_BEFORE)
            await wait_calls(sessions, 4)

            said = new.run("db", "upgrade")  # under the old worker's running tasks
            assert "applied" in said, said
            assert not await all_final(sessions, ids), "the tasks ended before the migration"
            assert "up to date" in new.run("db", "check")
            # the old worker runs the old API's tasks on the new schema
            ids += submit(old_api, http_spec(sim.base_url), SEEDS_BESIDE)
            await wait_calls(sessions, await calls_recorded(sessions) + 10)
            # every old worker stops (handing its tasks back) before the first new one starts
            assert old_worker.stop() == 0, old_worker.tail()
            assert not await all_final(sessions, ids)  # the new worker resumes the rest
            calls = await calls_recorded(sessions)
            between = submit(old_api, http_spec(sim.base_url), SEEDS_BETWEEN)
            await asyncio.sleep(2)  # no worker: nothing runs, the new task waits queued
            assert await calls_recorded(sessions) == calls
            assert await status_of(sessions, between[0]) == "queued"
            ids += between
            new_worker = workers.start(concurrency=8, **settings)
            new_worker.wait_ready()
            # then the API: what it stores, only this release's workers read
            ids += submit(new.serve(free_port()), http_spec(sim.base_url), SEEDS_AFTER)

            seeds = SEEDS_BEFORE + SEEDS_BESIDE + SEEDS_BETWEEN + SEEDS_AFTER
            await finished(sessions, ids, workers)
            persisted: Any = None
            compared = 0
            for task_id, seed in zip(ids, seeds, strict=True):
                task = await row_of(sessions, task_id)
                if not task.worker:  # run by the old release only (it does not set it)
                    assert task.status in FINAL_STATUSES and task.status != "error", task.error
                elif task.status == "error" and not observations_unchanged(old_release):
                    # started by the old release, resumed by the new one: its replay meets
                    # other observations (TextCraft's recipes in the reference's order since
                    # 0.2.0) and the task ends, saying so, rather than running on wrongly
                    assert task.error and "replay diverged at call 0" in task.error, task.error
                else:
                    status, tree = await reference(seed)
                    assert task.status == status, workers.logs()
                    assert await persisted_tree(sessions, task_id) == tree, f"seed {seed}"
                    compared += 1
                hashes = await persisted_prompt_hashes(sessions, task_id)
                persisted = hashes if persisted is None else persisted + hashes
            assert compared >= len(SEEDS_BETWEEN + SEEDS_AFTER)
            served = sim_prompt_hashes(sim.log())
            assert not persisted - served, "recorded calls the provider never answered"
            assert served - persisted == type(served)(), f"calls paid twice: {served - persisted}"
            assert old_worker.proc.returncode == 0
            assert "Traceback" not in old_worker.log_path.read_text()
        finally:
            workers.stop_all()
            old.stop()
            new.stop()
            await engine.dispose()
            stop_sim_server(sim)


async def row_of(sessions: Any, task_id: str) -> Any:
    from adapt.store.models import Task

    async with sessions() as s:
        task = await s.get(Task, task_id)
        assert task is not None
        return task


def observations_unchanged(old_release: Path) -> bool:
    """Whether the previous release shows TextCraft's recipes as this one does (0.1.0 does
    not: its tasks cannot be resumed by replay here)."""
    name = "adapt/envs/textcraft/recipes-1.16.5.tsv"
    old = old_release / name
    return old.exists() and old.read_bytes() == (ROOT / name).read_bytes()


async def status_of(sessions: Any, task_id: str) -> str:
    from adapt.store.models import Task

    async with sessions() as s:
        task = await s.get(Task, task_id)
        return str(task.status) if task is not None else "missing"


async def all_final(sessions: Any, ids: list[str]) -> bool:
    return all([await status_of(sessions, i) in FINAL_STATUSES for i in ids])


async def finished(sessions: Any, ids: list[str], workers: Workers, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not await all_final(sessions, ids):
        states = [await status_of(sessions, i) for i in ids]
        assert time.monotonic() < deadline, f"{states}\n{workers.logs()}"
        await asyncio.sleep(0.2)
