"""One episode's connection to an MCP server, through the official ``mcp`` package.

The ``mcp`` client is asynchronous (anyio) and its transports are context managers that must
be entered and left by one task. The environment's methods are synchronous (the engine runs
them in its step threads), so every connection lives on one event loop of its own per process
(a daemon thread, :func:`_loop`): a connection's owner task opens the transport and the
session, lists the tools, and waits until it is told to close; calls are sent to that loop and
waited for with a deadline.

Transports: stdio (the registered command, started for the episode with the minimal
environment of :mod:`adapt.envs.processes`, in the episode's own folder, its standard error in
a file there) and streamable HTTP (the registered URL, checked against the outbound address
policy before connecting; for ``http://`` URLs the request goes to the checked address).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapt.envs.mcp.extra import require
from adapt.envs.mcp.settings import ServerSpec
from adapt.envs.processes import minimal_environment
from adapt.envs.tools import ToolSpec
from adapt.errors import ToolServerFailed as ServerFailed
from adapt.errors import UserError
from adapt.net.policy import OutboundPolicy, pinned

log = logging.getLogger(__name__)

#: variables the ``mcp`` stdio transport copies from the worker's environment unless the
#: server's environment sets them: the server's environment gives each a value of its own
_INHERITED = {"LOGNAME": "adapt", "USER": "adapt", "SHELL": "/bin/sh", "TERM": "dumb"}

_loop_lock = threading.Lock()
_the_loop: asyncio.AbstractEventLoop | None = None


def _loop() -> asyncio.AbstractEventLoop:
    """The process's MCP event loop (started on first use, in a daemon thread)."""
    global _the_loop
    with _loop_lock:
        if _the_loop is None or _the_loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="adapt-mcp", daemon=True).start()
            _the_loop = loop
        return _the_loop


@dataclass(frozen=True, slots=True)
class CallResult:
    """What one tool call gave: its text (the content's text parts), and whether the server
    called it an error (or it timed out)."""

    text: str
    error: bool = False
    timed_out: bool = False


def tool_spec(tool: Any) -> ToolSpec:
    """An ``mcp`` ``Tool`` as the environment's :class:`ToolSpec` (its annotations as hints)."""
    hints = tool.annotations
    read_only = bool(hints and hints.read_only_hint)
    return ToolSpec(
        name=tool.name, description=(tool.description or "").strip(),
        parameters=dict(tool.input_schema or {"type": "object", "properties": {}}),
        read_only=read_only,
        # MCP's default for destructive is true (for a tool that is not read-only)
        destructive=bool(not read_only and (hints is None or hints.destructive_hint is not False)),
        idempotent=bool(read_only or (hints and hints.idempotent_hint)))


def _text(result: Any) -> str:
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind or 'content'} not shown]")
    if not parts and result.structured_content is not None:
        import json

        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def expand(values: Sequence[str], workspace: Path | None) -> list[str]:
    """``values`` with ``{workspace}`` replaced by the episode's workspace copy."""
    return [v.replace("{workspace}", str(workspace)) if workspace is not None else v
            for v in values]


class Connection:
    """One episode's session with one server: open it, list its tools, call them, close it."""

    def __init__(self, name: str, spec: ServerSpec, *, folder: Path, workspace: Path | None,
                 policy: OutboundPolicy, start_timeout: float) -> None:
        require()
        self.name, self.spec, self.folder, self.workspace = name, spec, folder, workspace
        self.policy = policy
        self.start_timeout = start_timeout
        self.tools: list[ToolSpec] = []
        self._session: Any = None
        self._stop: asyncio.Event | None = None
        self._owner: Future[None] | None = None
        self._errlog: Any = None

    # -- opening and closing ----------------------------------------------------------------
    def open(self) -> list[ToolSpec]:
        """Start (or reach) the server and list its tools; :class:`ServerFailed` otherwise."""
        ready: Future[list[ToolSpec]] = Future()
        self._owner = asyncio.run_coroutine_threadsafe(self._own(ready), _loop())
        try:
            self.tools = ready.result(self.start_timeout)
        except FutureTimeout:
            self.close()
            raise ServerFailed(f"MCP server {self.name!r} did not start within "
                               f"{self.start_timeout:g} s{self._stderr_tail()}") from None
        except UserError:  # the server's failure, an address the policy refuses: as they are
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise ServerFailed(f"MCP server {self.name!r} could not be started: "
                               f"{type(exc).__name__}: {exc}{self._stderr_tail()}") from None
        return self.tools

    def close(self) -> None:
        """Stop the session (and a stdio server's process); safe to call twice."""
        owner, self._owner = self._owner, None
        stop = self._stop
        if owner is not None:
            if stop is not None:
                _loop().call_soon_threadsafe(stop.set)
            else:
                owner.cancel()
            try:
                owner.result(15)
            except Exception as exc:  # a server that broke down while closing
                log.debug("MCP server %r closed with %s", self.name, exc)
        self._session = None
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    def _stderr_tail(self) -> str:
        path = self.folder / "server-stderr.log"
        try:
            tail = path.read_text(encoding="utf-8", errors="replace")[-400:].strip()
        except OSError:
            return ""
        return f"; its last words: {tail}" if tail else ""

    async def _own(self, ready: Future[list[ToolSpec]]) -> None:
        from mcp import ClientSession

        self._stop = asyncio.Event()
        try:
            async with self._transport() as streams, ClientSession(streams[0],
                                                                   streams[1]) as session:
                await session.initialize()
                tools: list[ToolSpec] = []
                cursor: str | None = None
                while True:
                    from mcp.types import PaginatedRequestParams

                    listed = await session.list_tools(
                        params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                    tools.extend(tool_spec(t) for t in listed.tools)
                    cursor = listed.next_cursor
                    if not cursor:
                        break
                self._session = session
                ready.set_result(tools)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else
                                    ServerFailed(f"MCP server {self.name!r} stopped"))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._session = None

    def _transport(self) -> Any:
        if self.spec.command is not None:
            return self._stdio()
        return self._http()

    def _stdio(self) -> Any:
        from mcp import StdioServerParameters, stdio_client

        home = self.folder / "home"
        home.mkdir(parents=True, exist_ok=True)
        env = minimal_environment(home=str(home), extra={
            **_INHERITED, "TMPDIR": str(home), **dict(zip(
                self.spec.env, expand(list(self.spec.env.values()), self.workspace),
                strict=True))})
        params = StdioServerParameters(
            command=str(self.spec.command), args=expand(self.spec.args, self.workspace),
            env=env, cwd=str(self.folder))
        self._errlog = open(self.folder / "server-stderr.log", "w", encoding="utf-8")  # noqa: SIM115
        return stdio_client(params, errlog=self._errlog)

    def _http(self) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        url = str(self.spec.url)
        addresses = self.policy.resolve_and_check(url)  # refused: OutboundRefused (UserError)
        headers = {k: v.get_secret_value() for k, v in self.spec.headers.items()}
        if url.startswith("http://"):
            target = pinned(url, addresses[0])
            url = target.url
            headers["Host"] = target.host_header
        client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0),
                                    follow_redirects=False, trust_env=False)
        return _closing_client(client, streamable_http_client(url, http_client=client))

    # -- calls --------------------------------------------------------------------------------
    def call(self, name: str, arguments: Mapping[str, Any], timeout: float) -> CallResult:
        """Call tool ``name``; a call past ``timeout`` seconds is abandoned (``timed_out``)."""
        session = self._session
        if session is None:
            raise ServerFailed(f"MCP server {self.name!r} is not running (it stopped, or the "
                               f"episode was not started){self._stderr_tail()}")

        async def send() -> Any:
            return await asyncio.wait_for(session.call_tool(name, dict(arguments)), timeout)

        future = asyncio.run_coroutine_threadsafe(send(), _loop())
        try:
            result = future.result(timeout + 5)
        except (TimeoutError, FutureTimeout):
            future.cancel()
            return CallResult(f"The call to {name} timed out after {timeout:g} s.", True, True)
        except Exception as exc:
            if self._session is None:
                raise ServerFailed(f"MCP server {self.name!r} stopped during a call to {name}"
                                   f"{self._stderr_tail()}") from None
            return CallResult(f"The call to {name} failed: {type(exc).__name__}: {exc}", True)
        return CallResult(_text(result), bool(result.is_error))


class _closing_client:
    """``inner`` entered and left, then ``client`` closed."""

    def __init__(self, client: Any, inner: Any) -> None:
        self.client, self.inner = client, inner

    async def __aenter__(self) -> Any:
        return await self.inner.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self.inner.__aexit__(*exc)
        finally:
            await self.client.aclose()
