"""The mcp environment on real servers: the tiny test server (stdio and streamable HTTP) and
the npm filesystem server; the conformance kit, the tools' hints, the limits, the config's
names, what a server process can see."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapt.envs.mcp import MCPConfig, MCPEnvironment, MCPSettings, use_settings
from adapt.envs.mcp.grammar import action
from adapt.envs.testing import check_environment
from adapt.errors import InvalidConfig, OutboundRefused
from tests.support.mcp_servers import (
    TEST_SERVER,
    filesystem_spec,
    require_filesystem_server,
    tiny_server_spec,
)

SENTINEL = "sentinel-5c1e0b7d"


def tiny(tmp_path: Path, **extra: object) -> MCPSettings:
    folder = tmp_path / "tiny"
    folder.mkdir(exist_ok=True)
    return MCPSettings(servers={"tiny": tiny_server_spec(str(folder))},
                       work_dir=tmp_path / "work", **extra)  # type: ignore[arg-type]


def call(name: str, **arguments: object) -> str:
    return action(name, arguments)


@pytest.mark.slow  # about 40 s: every reset starts the server again
def test_the_conformance_kit_passes_on_a_real_server(tmp_path: Path) -> None:
    with use_settings(tiny(tmp_path)):  # the kit validates configs with the class's model
        report = check_environment(MCPEnvironment,
                                   configs=[{"server": "tiny", "task": "Say hello."}],
                                   actions=[call("echo", text="hello"), call("big", n=3)],
                                   # HOME is the episode's own folder
                                   varying_tools=["environ"])
    assert "deterministic_steps" in report.passed and "tools" in report.passed
    assert report.tools == ["big", "echo", "environ", "nap", "note"]


def test_tools_carry_the_servers_hints(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.txt").write_text("hi\n")
    settings = MCPSettings(servers={"files": filesystem_spec()},
                           workspaces={"w": tmp_path / "t"}, work_dir=tmp_path / "work")
    env = MCPEnvironment(settings=settings)
    try:
        env.reset(server="files", workspace="w", task="read a.txt")
        tools = {t.name: t for t in env.tools()}
        assert tools["read_text_file"].read_only and tools["read_text_file"].idempotent
        assert tools["write_file"].idempotent and tools["write_file"].destructive
        assert not tools["move_file"].idempotent and not tools["move_file"].read_only
        assert not tools["edit_file"].idempotent
        assert not tools["create_directory"].destructive and tools["create_directory"].idempotent
        line = env.tool_action("read_text_file", {"path": "a.txt"})
        assert line == 'tool {"name": "read_text_file", "arguments": {"path": "a.txt"}}'
        with pytest.raises(ValueError, match="no tool 'rm'"):
            env.tool_action("rm", {})
    finally:
        env.close()


def test_a_server_process_cannot_read_the_workers_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADAPT_TEST_SECRET", SENTINEL)
    monkeypatch.setenv("PATH", f"/opt/secret-{SENTINEL}:{os.environ['PATH']}")
    env = MCPEnvironment(settings=tiny(tmp_path))
    try:
        env.reset(server="tiny", task="show the environment")
        seen = env.step(call("environ")).observation
    finally:
        env.close()
    assert "PATH=/usr/local/sbin" in seen and "HOME=" in seen
    assert SENTINEL not in seen
    names = {line.split("=", 1)[0] for line in seen.splitlines() if "=" in line}
    assert names <= {"PATH", "LANG", "HOME", "TMPDIR", "LOGNAME", "USER", "SHELL", "TERM"}


def test_results_are_capped_and_slow_calls_time_out(tmp_path: Path) -> None:
    env = MCPEnvironment(settings=tiny(tmp_path, max_result_chars=1000, call_timeout_seconds=0.5))
    try:
        env.reset(server="tiny", task="t")
        shown = env.step(call("big", n=50_000)).observation
        assert len(shown) <= 1000 and "characters left out" in shown
        started = time.monotonic()
        slow = env.step(call("nap", seconds=5)).observation
        assert "timed out after 0.5 s" in slow and env.is_failure(slow)
        assert time.monotonic() - started < 4
        assert env.step(call("echo", text="still here")).observation == "still here"
    finally:
        env.close()


def test_bad_calls_are_observations(tmp_path: Path) -> None:
    env = MCPEnvironment(settings=tiny(tmp_path))
    try:
        env.reset(server="tiny", task="t")
        for line, says in [("tool {not json}", "not valid JSON"),
                           ('tool {"name": "rm", "arguments": {}}', "no tool 'rm'"),
                           ('tool {"name": "echo", "arguments": []}', "must be a JSON object"),
                           ("ls -l", "Invalid action")]:
            result = env.step(line)
            assert says in result.observation and env.is_failure(result.observation)
        wrong = env.step(call("echo", words=1)).observation
        assert wrong.startswith("Error from echo") and env.is_failure(wrong)
    finally:
        env.close()


def test_the_config_names_only_what_is_registered(tmp_path: Path) -> None:
    settings = tiny(tmp_path)
    model = MCPConfig.bound(settings)
    model.model_validate({"server": "tiny", "task": "t"})
    for config, field in [({"server": "nope", "task": "t"}, "server"),
                          ({"server": "tiny", "task": "t", "workspace": "w"}, "workspace"),
                          ({"server": "tiny", "task": "t", "check": "c"}, "check"),
                          ({"server": "tiny", "task": "t", "command": "sh"}, "command"),
                          ({"server": "/bin/sh", "task": "t"}, "server")]:
        env = MCPEnvironment(settings=settings)
        with pytest.raises(InvalidConfig, match=field):
            env.reset(**config)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(TEST_SERVER), "http", str(port),
                             str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_streamable_http_passes_the_outbound_policy(tmp_path: Path, http_server: str) -> None:
    refused = MCPEnvironment(settings=MCPSettings(servers={"remote": {"url": http_server}},
                                                  work_dir=tmp_path / "w"))
    with pytest.raises(InvalidConfig, match="ADAPT_MCP_ALLOWED_NETWORKS"):
        refused.reset(server="remote", task="t")  # when the task names it
    refused.close()
    allowed = MCPEnvironment(settings=MCPSettings(
        servers={"remote": {"url": http_server, "headers": {"Authorization": "Bearer t"}}},
        allowed_networks=["127.0.0.1/32"], work_dir=tmp_path / "w"))
    try:
        allowed.reset(server="remote", task="t")
        assert {t.name for t in allowed.tools()} >= {"echo", "note"}
        assert allowed.step(call("echo", text="over http")).observation == "over http"
        assert allowed.step(call("note", text="one")).observation == "noted: one"
    finally:
        allowed.close()
    assert (tmp_path / "notes.txt").read_text() == "one\n"


def test_each_episode_works_on_a_fresh_copy_removed_after(tmp_path: Path) -> None:
    require_filesystem_server()
    template = tmp_path / "template"
    template.mkdir()
    (template / "a.txt").write_text("original\n")
    settings = MCPSettings(servers={"files": filesystem_spec()}, workspaces={"t": template},
                           work_dir=tmp_path / "work")
    env = MCPEnvironment(settings=settings)
    try:
        env.reset(server="files", workspace="t", task="change a.txt")
        listed = env.step(call("list_allowed_directories")).observation
        copy = Path(listed.splitlines()[1])
        assert copy.parent.parent == tmp_path / "work" and copy != template
        env.step(call("write_file", path=str(copy / "a.txt"), content="changed\n"))
        assert (copy / "a.txt").read_text() == "changed\n"
        outside = env.step(call("read_text_file", path=str(template / "a.txt"))).observation
        assert "Access denied" in outside
        env.reset(server="files", workspace="t", task="again")
        again = Path(env.step(call("list_allowed_directories")).observation.splitlines()[1])
        assert (again / "a.txt").read_text() == "original\n"
    finally:
        env.close()
    assert (template / "a.txt").read_text() == "original\n"
    assert list((tmp_path / "work").iterdir()) == []


def test_a_name_is_checked_again_on_the_addresses_it_resolves_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def rebinding(host: str, *args: object, **kwargs: object) -> object:
        if host == "mcp.example.com":  # a public name whose DNS answer points inside
            return real("127.0.0.1", *args, **kwargs)  # type: ignore[arg-type]
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    env = MCPEnvironment(settings=MCPSettings(
        servers={"remote": {"url": "http://mcp.example.com/mcp"}}, work_dir=tmp_path / "w"))
    with pytest.raises(OutboundRefused, match="resolves to an address that is not public"):
        env.reset(server="remote", task="t")  # the name passes; its address does not
    env.close()
