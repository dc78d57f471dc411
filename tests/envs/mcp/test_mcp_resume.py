"""How the mcp environment resumes from an earlier attempt's recorded steps (without the
service: the history an attempt would hand it), counted at real servers: replay on a fresh
workspace copy, a journal without one, and a call in flight at the crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapt.envs.journal import RecordedStep, ResumeHistory
from adapt.envs.mcp import MCPEnvironment, MCPSettings
from adapt.envs.mcp.grammar import action
from adapt.errors import InFlightCallRefused
from tests.support.mcp_servers import filesystem_spec, tiny_server_spec


def tiny_env(tmp_path: Path) -> tuple[MCPEnvironment, Path]:
    folder = tmp_path / "server"
    folder.mkdir(exist_ok=True)
    return MCPEnvironment(settings=MCPSettings(servers={"tiny": tiny_server_spec(str(folder))},
                                               work_dir=tmp_path / "work")), folder / "notes.txt"


def test_journal_reuses_recorded_results_without_calling_again(tmp_path: Path) -> None:
    env, notes = tiny_env(tmp_path)
    one, two = action("note", {"text": "one"}), action("note", {"text": "two"})
    env.resume_with(ResumeHistory(key="task1", steps=[RecordedStep(one, "noted: one")],
                                  replaying=lambda: True))
    try:
        env.reset(server="tiny", task="take notes")
        assert env.resumes_by == "journal"
        assert env.step(one).observation == "noted: one"
        assert not notes.exists()  # the recorded result; the server was not called
        with pytest.raises(InFlightCallRefused, match=r'"note".*neither read-only nor idem'):
            env.step(two)  # asked for by a recorded answer, its step not recorded: in flight
        assert not notes.exists()
        assert env.step(action("echo", {"text": "hi"})).observation == "hi"  # read-only: sent
    finally:
        env.close()


def test_once_live_calls_are_sent_again(tmp_path: Path) -> None:
    env, notes = tiny_env(tmp_path)
    one = action("note", {"text": "one"})
    live = {"now": False}
    env.resume_with(ResumeHistory(key="task2", steps=[RecordedStep(one, "noted: one")],
                                  replaying=lambda: not live["now"]))
    try:
        env.reset(server="tiny", task="take notes")
        env.step(one)
        live["now"] = True  # the model answered live: its calls are new ones
        assert env.step(action("note", {"text": "two"})).observation == "noted: two"
    finally:
        env.close()
    assert notes.read_text() == "two\n"


def test_a_diverging_replay_stops(tmp_path: Path) -> None:
    env, _ = tiny_env(tmp_path)
    env.resume_with(ResumeHistory(key="t3", steps=[
        RecordedStep("think: nothing", "OK."),
        RecordedStep(action("note", {"text": "one"}), "noted: one")], replaying=lambda: True))
    try:
        env.reset(server="tiny", task="t")
        with pytest.raises(InFlightCallRefused, match="diverged"):
            env.step(action("note", {"text": "other"}))
    finally:
        env.close()


def test_replay_rebuilds_the_workspace_on_a_fresh_copy(tmp_path: Path) -> None:
    template = tmp_path / "template"
    (template / "in").mkdir(parents=True)
    (template / "in" / "a.txt").write_text("a\n")
    log = tmp_path / "calls.jsonl"
    settings = MCPSettings(servers={"files": filesystem_spec(log=log)},
                           workspaces={"t": template}, work_dir=tmp_path / "work")
    ws = tmp_path / "work" / "task4" / "workspace"
    steps = [(action("create_directory", {"path": f"{ws}/out"}), "Successfully created"),
             (action("move_file", {"source": f"{ws}/in/a.txt",
                                   "destination": f"{ws}/out/a.txt"}), "Successfully moved"),
             (action("list_directory", {"path": f"{ws}/out"}), "[FILE] a.txt (recorded)")]
    # the first attempt's folder, left behind by a dead worker: replaced by a fresh copy
    (ws / "out").mkdir(parents=True)
    (ws / "stale.txt").write_text("left behind")
    env = MCPEnvironment(settings=settings)
    env.resume_with(ResumeHistory(key="task4", steps=[RecordedStep(a, o) for a, o in steps],
                                  replaying=lambda: True))
    try:
        env.reset(server="files", workspace="t", task="move a.txt to out")
        assert env.resumes_by == "replay"
        for line, recorded in steps:
            assert env.step(line).observation == recorded  # what the executor saw before
        assert (ws / "out" / "a.txt").read_text() == "a\n" and not (ws / "in" / "a.txt").exists()
        assert not (ws / "stale.txt").exists()
        write = action("write_file", {"path": f"{ws}/b.txt", "content": "b"})
        assert "Successfully wrote" in env.step(write).observation  # in flight, idempotent: sent
        with pytest.raises(InFlightCallRefused, match="move_file"):
            env.step(action("move_file", {"source": f"{ws}/b.txt", "destination": f"{ws}/c"}))
    finally:
        env.close()
    import json

    calls = [json.loads(line)["tool"] for line in log.read_text().splitlines()]
    # the read-only call was not sent again; each change once, on the fresh copy
    assert calls == ["create_directory", "move_file", "write_file"]
