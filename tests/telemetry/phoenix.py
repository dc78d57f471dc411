"""Arize Phoenix as a real OTLP backend for the trace tests: started as a subprocess on free
loopback ports with its working dir (its SQLite database) in a temp folder, told to make no
request to the internet (no telemetry pixels, no web fonts, no assistant), and read back over
its REST API. Also drives ``adapt serve`` with export on, and photographs a trace."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_embedded_serve import Server, free_port
from tests.telemetry.treeutil import Flat

#: the task the tests and the screenshot run: README-style, TextCraft seed 11, ADaPT d_max 4
TASK = {"environment": "textcraft", "environment_config": {"seed": 11}, "d_max": 4,
        "executor": {"model": "sim:textcraft?capability=1"}}


def installed() -> bool:
    try:  # (find_spec of a submodule would import phoenix itself)
        return importlib.util.find_spec("phoenix") is not None
    except (ImportError, ValueError):
        return False


class Phoenix:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[str] | None = None
        self.log = workdir / "phoenix.log"

    def start(self, timeout: float = 180) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        env.update({
            "PHOENIX_WORKING_DIR": str(self.workdir), "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port), "PHOENIX_GRPC_PORT": str(free_port()),
            # nothing leaves the machine: no analytics, no fonts or downloads, no assistant
            "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
            "PHOENIX_DISABLE_AGENT_ASSISTANT": "true", "PHOENIX_ENABLE_MCP_SERVER": "false",
            "DO_NOT_TRACK": "1",
        })
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "phoenix.server.main", "serve"], cwd=self.workdir,
                stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, self.log.read_text()[-4000:]
            time.sleep(0.25)
        raise AssertionError("Phoenix did not start:\n" + self.log.read_text()[-4000:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def export_env(self, project: str) -> dict[str, str]:
        """What an operator sets to send adapt's traces here (into ``project``)."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.url, "OTEL_SERVICE_NAME": "adapt",
                "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}"}

    def project_id(self, name: str) -> str:
        body = httpx.get(f"{self.url}/v1/projects", timeout=10).json()
        return str(next(p["id"] for p in body["data"] if p["name"] == name))

    def spans(self, project: str, trace_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"trace_id": trace_id, "limit": 1000}
            if cursor:
                params["cursor"] = cursor
            response = httpx.get(f"{self.url}/v1/projects/{project}/spans", params=params,
                                 timeout=10)
            if response.status_code == 404:  # the project exists once its first span arrived
                return []
            response.raise_for_status()
            body = response.json()
            out.extend(body["data"])
            cursor = body.get("next_cursor")
            if not cursor:
                return out

    def wait_for_trace(self, project: str, trace_id: str, count: int,
                       timeout: float = 60) -> list[dict[str, Any]]:
        """The trace's spans once ``count`` of them arrived (and no more come)."""
        deadline = time.monotonic() + timeout
        spans: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            spans = self.spans(project, trace_id)
            if len(spans) >= count:
                time.sleep(1.5)  # a later batch would show duplicates
                return self.spans(project, trace_id)
            time.sleep(0.5)
        raise AssertionError(f"{len(spans)} of {count} spans reached Phoenix")


def flat(span: dict[str, Any]) -> Flat:
    parent = span.get("parent_id")
    return Flat(int(span["context"]["span_id"], 16), int(parent, 16) if parent else None,
                span["name"], attributes(span))


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    """Phoenix's REST spans carry attributes as OTLP key/value pairs."""
    raw = span.get("attributes") or {}
    if isinstance(raw, dict):
        return raw
    out: dict[str, Any] = {}
    for item in raw:
        value = item["value"]
        (kind, v), = value.items() if value else (("string_value", None),)
        out[item["key"]] = int(v) if kind == "int_value" else v
    return out


def serve_with_export(data_dir: Path, phoenix: Phoenix, project: str) -> Server:
    data_dir.mkdir(parents=True, exist_ok=True)
    server = Server(data_dir, free_port())
    server.start(**phoenix.export_env(project))
    return server


def run_task(server: Server) -> dict[str, Any]:
    task = httpx.post(f"{server.url}/tasks", json=TASK, timeout=10)
    assert task.status_code == 202, task.text
    task_id = task.json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        body: dict[str, Any] = httpx.get(f"{server.url}/tasks/{task_id}", timeout=10).json()
        if body["finished"]:
            return body
        time.sleep(0.2)
    raise AssertionError("the task did not finish")


def screenshot(phoenix: Phoenix, project: str, trace_id: str, path: Path,
               chromium: str) -> None:
    """The trace's tree in Phoenix's UI, photographed by the system Chromium (requests that
    would leave the machine are refused)."""
    from playwright.sync_api import Route, sync_playwright

    def local_only(route: Route) -> None:
        if route.request.url.startswith(phoenix.url):
            route.continue_()
        else:
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.route("**/*", local_only)
            page.goto(f"{phoenix.url}/projects/{phoenix.project_id(project)}/traces/{trace_id}")
            page.get_by_text("invoke_workflow adapt").first.wait_for(timeout=60_000)
            page.get_by_text("plan react").first.wait_for(timeout=30_000)
            page.wait_for_timeout(1000)
            page.screenshot(path=path)
        finally:
            browser.close()
