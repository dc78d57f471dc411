"""The mcp environment: a task done with the tools of an MCP server the operator registered.

Actions are the server's tools (``list_tools`` when the episode starts). A text executor calls
one per line as ``tool {"name": "<tool>", "arguments": {...}}``; the ``tools`` executor gets
the same tools as function schemas (:meth:`MCPEnvironment.tools`) and turns each call back into
that line (:meth:`MCPEnvironment.tool_action`), so every call is a step like any other.

Each episode has a folder of its own (``workspace.py``): the server's working folder and, when
the task names a workspace template, a fresh copy of it that a stdio server is started on
(``{workspace}`` in its registered arguments). A tool result is kept up to
``ADAPT_MCP_MAX_RESULT_CHARS`` characters; a call may take ``ADAPT_MCP_CALL_TIMEOUT_SECONDS``.

Success: sub-goals cannot be checked (``unknown``: the executor's claim stands). When the task
names a check, the engine sends the final action ``check`` at the end (:class:`FinalAction`):
the registered command runs on the workspace, exit status 0 gives reward 1 (and the task's
verdict ``confirmed``), anything else reward 0 (``refuted``), its output shortened into the
evidence. The folder is removed when the environment is closed (after scoring).

Resume (``adapt.envs.journal``): the steps a task's earlier attempts recorded are handed to the
environment. With a workspace it *replays*: the fresh copy gets every recorded call that is not
read-only once more, in order, while the executor sees the recorded results (the folder is
named by the task's id, so the paths in them stay right); without one it keeps a *journal*:
recorded results are returned and the server is not called. A call in flight at the crash is
sent again only when its tool is read-only or idempotent; otherwise
:class:`~adapt.errors.InFlightCallRefused` stops the attempt, naming the call.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from adapt.envs.base import BaseEnvironment, StepResult, invalid_config
from adapt.envs.journal import RecordedStep, ResumeHistory, ResumeMode
from adapt.envs.mcp import grammar
from adapt.envs.mcp.client import CallResult, Connection, expand
from adapt.envs.mcp.config import MCPConfig
from adapt.envs.mcp.settings import MCPSettings, current_settings, mcp_policy
from adapt.envs.mcp.workspace import Episode, default_work_dir, new_episode, run_check, shorten
from adapt.envs.tools import ToolCallError, ToolSpec, validate_arguments
from adapt.envs.verdicts import UNKNOWN, Verification, same_goal
from adapt.errors import InFlightCallRefused, UserError

log = logging.getLogger(__name__)

CHECK = "check"
TOOL_ERROR = "Error from "
NO_CHECK = "This task has no check: say when you are done (Task completed!)."


class MCPEnvironment(BaseEnvironment):
    """The tools of a registered MCP server, on a fresh workspace copy per episode."""

    name: ClassVar[str] = "mcp"
    description: ClassVar[str] = (
        "Do a task with the tools of an MCP server the operator registered (a process per "
        "episode over stdio, or a URL over streamable HTTP), optionally on a fresh copy of a "
        "registered workspace; a registered check run on the workspace decides success."
    )
    config_model: ClassVar[type[BaseModel]] = MCPConfig
    default_max_steps: ClassVar[int] = 30
    action_grammar: ClassVar[str] = (
        'tool {"name": "<tool>", "arguments": {<the arguments as JSON>}}  (call one of the '
        "server's tools, listed with the task)"
    )
    prompt_package: ClassVar[str | None] = "adapt.envs.mcp"
    prompt_sets: ClassVar[dict[str, frozenset[str]]] = {"mcpmark": frozenset({"executor"})}
    settings_model: ClassVar[type[MCPSettings]] = MCPSettings
    #: starting a server and every call wait on another process: run in the engine's threads
    blocking_steps: ClassVar[bool] = True
    #: sent by the engine at the end, so the registered check scores the workspace (an instance
    #: without a check sets None)
    final_action: ClassVar[str | None] = CHECK
    success_reward: ClassVar[float | None] = 1.0

    def __init__(self, *, settings: MCPSettings | None = None) -> None:
        self._given = settings
        if settings is not None:  # names are checked against these registrations
            self.config_model = MCPConfig.bound(settings)  # type: ignore[misc]
        self._settings: MCPSettings | None = None
        self._config: MCPConfig | None = None
        self._episode: Episode | None = None
        self._conn: Connection | None = None
        self._tools: dict[str, ToolSpec] = {}
        self._verdict: Verification | None = None
        self._history: ResumeHistory | None = None
        self._journal: deque[RecordedStep] = deque()

    # -- resume (adapt.envs.journal) ------------------------------------------------------------
    def resume_with(self, history: ResumeHistory) -> None:
        self._history = history
        self._journal = deque(history.steps)

    @property
    def resumes_by(self) -> ResumeMode:
        """``replay`` (a workspace, rebuilt) or ``journal`` (recorded results reused)."""
        return self.resume_mode_for({} if self._config is None else
                                    {"workspace": self._config.workspace})

    @classmethod
    def resume_mode_for(cls, config: Mapping[str, Any]) -> ResumeMode:
        """How a task with ``config`` resumes (and is forked): ``replay`` with a workspace (a
        fresh copy, the recorded calls sent again), else ``journal`` (the server is not called
        again for what was recorded, so its world cannot be put back to an earlier point)."""
        return "replay" if config.get("workspace") else "journal"

    # -- episode ----------------------------------------------------------------------------------
    def start(self, cfg: MCPConfig) -> str:
        settings = self._given or current_settings()
        try:  # the names again, against the registrations in force now
            model = self.config_model if self._given is not None else MCPConfig
            model.model_validate(cfg.model_dump())
        except ValidationError as exc:
            raise invalid_config(self.name, exc) from None
        self._end_episode()
        self._settings, self._config, self._verdict = settings, cfg, None
        self.final_action = CHECK if cfg.check else None  # type: ignore[misc]
        self.success_reward = 1.0 if cfg.check else None  # type: ignore[misc]
        template = settings.workspaces[cfg.workspace] if cfg.workspace else None
        if template is not None and not Path(template).is_dir():
            raise UserError(f"mcp: workspace template {cfg.workspace!r} is not a folder on this "
                            "server (ADAPT_MCP_WORKSPACES)")
        work_dir = settings.work_dir or default_work_dir()
        key = self._history.key if self._history is not None else None
        self._episode = new_episode(work_dir, template, key)
        self._conn = Connection(cfg.server, settings.servers[cfg.server],
                                folder=self._episode.root, workspace=self._episode.workspace,
                                policy=mcp_policy(settings.allowed_networks),
                                start_timeout=settings.start_timeout_seconds)
        try:
            self._tools = {t.name: t for t in self._conn.open()}
        except BaseException:
            self._end_episode()
            raise
        return self.task_observation(cfg.task)

    def step(self, action: str) -> StepResult:
        cfg = self._require()
        text = action.strip()
        if text.lower().startswith("think:"):
            return StepResult("OK.")
        recorded = self._recorded(text)
        if text.lower() in (CHECK, f"{CHECK}[]"):
            return self._check(cfg, recorded)
        call = grammar.parse(text)
        if isinstance(call, str):
            return StepResult(call)
        spec = self._tools.get(call.name)
        if spec is None:
            return StepResult(f"{grammar.INVALID}: the server has no tool {call.name!r}; its "
                              f"tools are {', '.join(self._tools)}.")
        if recorded is not None:
            if self.resumes_by == "replay" and not spec.read_only:
                self._send(call, spec)  # rebuild the workspace; the recorded result stands
            return StepResult(recorded.observation, recorded.reward, recorded.done)
        if self._in_flight() and not (spec.read_only or spec.idempotent):
            raise InFlightCallRefused(
                f"mcp: the call {grammar.action(call.name, call.arguments)[:300]} was in flight "
                f"when the task's last attempt stopped; tool {call.name!r} of server "
                f"{cfg.server!r} is neither read-only nor idempotent, so it is not sent again "
                "(it may or may not have taken effect)")
        return StepResult(self._send(call, spec))

    def _send(self, call: grammar.Call, spec: ToolSpec) -> str:
        conn, settings = self._conn, self._settings
        if conn is None or settings is None:
            raise UserError("mcp: step() before reset()")
        result: CallResult = conn.call(call.name, call.arguments, settings.call_timeout_seconds)
        text = result.text if result.text.strip() else "(no output)"
        text = shorten(text, settings.max_result_chars)
        return f"{TOOL_ERROR}{spec.name}: {text}" if result.error else text

    def _recorded(self, text: str) -> RecordedStep | None:
        """The journal's entry for ``text`` (consumed), when a resumed attempt is still inside
        the recorded steps; entries that changed nothing and do not match are dropped."""
        while self._journal:
            head = self._journal[0]
            if head.action.strip() == text:
                return self._journal.popleft()
            if isinstance(grammar.parse(head.action), grammar.Call):
                raise InFlightCallRefused(
                    f"mcp: cannot resume: the recorded call {head.action.strip()[:200]} was "
                    f"followed by {text[:200]} this time (the replay diverged)")
            self._journal.popleft()
        return None

    def _in_flight(self) -> bool:
        """A call asked for by a recorded LLM answer whose step was not recorded."""
        return self._history is not None and not self._journal and self._history.replaying()

    def _check(self, cfg: MCPConfig, recorded: RecordedStep | None) -> StepResult:
        settings, episode = self._settings, self._episode
        if cfg.check is None or settings is None or episode is None or episode.workspace is None:
            return StepResult(NO_CHECK)
        if recorded is not None:
            passed = recorded.reward >= 1.0
            self._verdict = Verification("confirmed" if passed else "refuted",
                                         recorded.observation)
            return StepResult(recorded.observation, recorded.reward, recorded.done)
        spec = settings.checks[cfg.check]
        env = dict(zip(spec.env, expand(list(spec.env.values()), episode.workspace),
                       strict=True))
        outcome = run_check(expand(spec.command, episode.workspace), env, cwd=episode.root,
                            timeout=spec.timeout_seconds,
                            limit=settings.max_check_output_chars)
        verdict = "passed" if outcome.passed else "failed"
        evidence = f"check {cfg.check!r} {verdict}: {outcome.output}"
        self._verdict = Verification("confirmed" if outcome.passed else "refuted", evidence)
        return StepResult(evidence, 1.0 if outcome.passed else 0.0, True,
                          {"success": outcome.passed})

    def _require(self) -> MCPConfig:
        if self._config is None or self._conn is None:
            raise UserError("mcp: call reset(server=..., task=...) before step()")
        return self._config

    # -- tools (adapt.envs.tools) ---------------------------------------------------------------
    def tools(self) -> Sequence[ToolSpec]:
        return list(self._tools.values())

    def tool_action(self, name: str, arguments: Mapping[str, Any]) -> str:
        if name not in self._tools:
            raise ToolCallError(f"there is no tool {name!r}; the tools are "
                                f"{', '.join(self._tools) or 'none'}")
        # the server's own input schema, checked here: the model reads what is wrong
        validate_arguments(self._tools[name], arguments)
        return grammar.action(name, arguments)

    # -- verification: only the registered check decides --------------------------------------
    def verification_mark(self) -> object:
        return None

    def verify(self, goal: str, *, since: object | None = None) -> Verification:
        if self._verdict is not None and same_goal(goal, self.goal):
            return self._verdict
        return UNKNOWN

    # -- protocol ---------------------------------------------------------------------------------
    @property
    def goal(self) -> str:
        return "" if self._config is None else self._config.task

    def task_observation(self, goal: str) -> str:
        listing = grammar.tool_list(list(self._tools.values())) or "(none)"
        return f"Tools of the server:\n{listing}\n\nTask: {goal}"

    def is_failure(self, observation: str) -> bool:
        return observation.startswith((TOOL_ERROR, grammar.INVALID))

    def current_prompt_set(self) -> str | None:
        return None if self._config is None else self._config.prompts

    def server_paths(self, config: MCPConfig) -> dict[str, str]:
        """The server folders ``config`` names through registered names (checked against
        ``ADAPT_PATH_ROOTS`` where a task is submitted)."""
        settings = self._given or current_settings()
        if config.workspace is None:
            return {}
        return {"workspace": str(settings.workspaces[config.workspace])}

    def _end_episode(self) -> None:
        conn, self._conn = self._conn, None
        episode, self._episode = self._episode, None
        try:
            if conn is not None:
                conn.close()
        finally:
            if episode is not None:
                episode.remove()
        self._tools = {}

    def close(self) -> None:
        self._end_episode()
