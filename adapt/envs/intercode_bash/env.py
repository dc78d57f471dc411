"""The InterCode-Bash environment: do what a request asks with bash commands in a sandbox.

Actions (the keyword's case and spaces around it do not matter):

- ``execute[<command>]`` runs one bash command line in the episode's sandbox (see
  ``sandbox.py``) and shows its output (standard output and error interleaved, at most
  ``MAX_OBSERVATION_CHARS`` characters, with a note on what was left out), ``(no output)`` when
  it printed nothing, ``[exit status N]`` after a command that failed, or ``Command timed out``;
- ``submit`` ends the episode: the gold command runs in a fresh sandbox of the same file system
  and InterCode's reward compares the two file systems and the two last outputs
  (``reward.reward``); success is reward 1.0;
- ``think: ...`` is a thought: observation ``OK.``, no effect.

With ``observation="intercode"`` (profile ``paper``) the output is shown as InterCode's ReAct agent
shows it: raw, cut to ``INTERCODE_MAX_CHARS`` characters. At the turn limit the engine sends
``final_action`` (``submit``), as InterCode does, so the last state is scored.

As in InterCode, the output scored is the full output of the *last* ``execute`` (``Command timed
out`` when it timed out; none when nothing ran), and the working directory carries over from
one command to the next (``cd`` works), environment variables do not.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from adapt.envs.base import BaseEnvironment, StepResult
from adapt.envs.intercode_bash.changes import lookup, parse_status, status, status_text
from adapt.envs.intercode_bash.config import InterCodeBashConfig
from adapt.envs.intercode_bash.layers import Layers, default_cache_dir, load_prepared, prepare
from adapt.envs.intercode_bash.reward import reward as intercode_reward
from adapt.envs.intercode_bash.sandbox import (
    DEFAULT_TIMEOUT,
    CommandResult,
    Sandbox,
    check_sandbox,
    require_tools,
)
from adapt.envs.intercode_bash.settings import BashSettings
from adapt.envs.intercode_bash.tools import TOOLS
from adapt.envs.tools import ToolActions
from adapt.errors import UserError

logger = logging.getLogger(__name__)

#: characters of a command's output shown to the model (InterCode's plan-and-solve shows 1000)
MAX_OBSERVATION_CHARS = 1000
#: characters InterCode's ReAct agent shows of an observation (``observation="intercode"``)
INTERCODE_MAX_CHARS = 350
#: characters of the last output kept in the salient state
MAX_OUTPUT_IN_STATE = 200
#: what the output is, for the reward, when a command timed out (InterCode's observation)
TIMED_OUT = "Command timed out"
INVALID_ACTION = (
    "Invalid action. Use execute[<bash command>] to run one bash command and see its output, "
    "or submit to end the task."
)
#: InterCode's observation for an action that is neither execute[...] nor submit
INTERCODE_INVALID = "Error executing query: Your last `execute` action did not contain bash code"
ALREADY_SUBMITTED = "The task was already submitted; it is over."

_EXECUTE = re.compile(r"execute\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)
_SUBMIT = re.compile(r"submit(?:\s*\[\s*\])?\s*\.?", re.IGNORECASE)
_FAILED = re.compile(r"\[exit status \d+\]\s*$|\A" + TIMED_OUT)


def format_output(result: CommandResult, limit: int = MAX_OBSERVATION_CHARS) -> str:
    """A command's result as the model sees it."""
    if result.timed_out:
        text = result.text
        shown = f"\n{text[:limit]}" if text.strip() else ""
        return f"{TIMED_OUT} (after the time limit; it was stopped).{shown}"
    text = result.text
    parts = []
    if not text:
        parts.append("(no output)")
    else:
        parts.append(text[:limit].rstrip("\n"))
        if len(text) > limit:
            parts.append(f"[... {len(text) - limit} more characters not shown]")
    if result.truncated:
        parts.append("[the output limit was reached; the command was stopped]")
    elif result.exit_code:
        parts.append(f"[exit status {result.exit_code}]")
    return "\n".join(parts)


class InterCodeBash(ToolActions, BaseEnvironment):
    """InterCode-Bash (Yang et al., 2023): NL2Bash requests run in a namespace sandbox."""

    name: ClassVar[str] = "intercode_bash"
    description: ClassVar[str] = (
        "Do what a request in words asks (NL2Bash, via InterCode) by running bash commands in a "
        "sandboxed Linux file system and submitting: the reward compares the changed files and "
        "the last output with those of the gold command."
    )
    config_model: ClassVar[type[BaseModel]] = InterCodeBashConfig
    default_max_steps: ClassVar[int] = 10
    action_grammar: ClassVar[str] = (
        "execute[<bash command>]  (run one bash command line, e.g. execute[ls -l /testbed] or "
        "execute[find /testbed -name \"*.txt\" | wc -l])\n"
        "submit  (end the task: what the commands changed and the last output are scored)"
    )
    prompt_package: ClassVar[str | None] = "adapt.envs.intercode_bash"
    #: ``execute`` and ``submit`` as tools (``adapt.envs.intercode_bash.tools``)
    action_tools = TOOLS
    #: what StateAct tracks besides the goal
    state_fields: ClassVar[tuple[str, ...]] = ("working directory",)
    #: the environment's own settings (``ADAPT_BASH_*``)
    settings_model: ClassVar[type[BashSettings]] = BashSettings
    #: profile ``paper``: InterCode's ReAct protocol (10 turns, its observation cut)
    paper_profile: ClassVar[dict[str, dict[str, Any]]] = {
        "executor": {"max_steps": 10},
        "environment_config": {"observation": "intercode", "prompts": "paper"},
        # the ReAct baseline: InterCode's 10 turns in all, not 10 per depth level, each turn a
        # numbered thought and action, and no patience rule (InterCode's eval_react.py)
        "by_executor": {"react": {"run": {"react_steps": 10}, "react_format": "numbered",
                                  "patience": None}},
    }
    #: the kinds each prompt set (config ``prompts``) has under ``prompts/<set>/``
    prompt_sets: ClassVar[dict[str, frozenset[str]]] = {"paper": frozenset({"executor"})}
    #: sent by the engine when the turn limit ends a run before the episode did (InterCode
    #: submits at the turn limit, so the last state is scored)
    final_action: ClassVar[str | None] = "submit"
    #: the reward that counts as solved (InterCode: 1.0), for baselines that judge trials by it
    success_reward: ClassVar[float | None] = 1.0
    #: a command (and the gold command at ``submit``) runs for up to the time limit: the engine
    #: runs steps and episode starts in a worker thread, so its event loop keeps running
    blocking_steps: ClassVar[bool] = True

    def __init__(
        self,
        *,
        data_dir: str | Path | None = None,
        cache_dir: str | Path | None = None,
        timeout: float | None = None,
        max_processes: int | None = None,
        memory_mb: int | None = None,
    ) -> None:
        self._data_dir = Path(data_dir).expanduser() if data_dir else None
        self._max_processes = max_processes
        self._memory_mb = memory_mb
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir else None
        self._timeout = timeout
        self._layers: dict[int, Layers] = {}
        self._config: InterCodeBashConfig | None = None
        self._sandbox: Sandbox | None = None
        self._last_output: str | None = None
        self._last_command: str | None = None
        self._last_exit: int | None = None
        self._failed_observation: str | None = None
        self._done = False

    # -- set-up --------------------------------------------------------------------------------
    def _resolve(self) -> None:
        if (self._data_dir is None or self._cache_dir is None or self._timeout is None
                or self._max_processes is None or self._memory_mb is None):
            s = BashSettings()
            if self._data_dir is None and s.data_dir is not None:
                self._data_dir = s.data_dir
            if self._cache_dir is None:
                self._cache_dir = s.cache_dir or default_cache_dir()
            if self._timeout is None:
                self._timeout = s.command_timeout_seconds
            if self._max_processes is None:
                self._max_processes = s.command_max_processes
            if self._memory_mb is None:
                self._memory_mb = s.command_memory_mb

    def _new_sandbox(self, layers: Layers) -> Sandbox:
        """A sandbox of ``layers`` with this environment's limits."""
        self._resolve()
        return Sandbox(layers.stack, timeout=self.timeout, usr=layers.usr,
                       max_processes=self._max_processes,
                       max_memory=None if self._memory_mb is None else self._memory_mb << 20)

    @property
    def timeout(self) -> float:
        """Seconds one command may run."""
        self._resolve()
        return self._timeout if self._timeout is not None else DEFAULT_TIMEOUT

    def layers(self, fs: int) -> Layers:
        """The prepared layers of file system ``fs`` (prepared now when missing and the data
        directory is known)."""
        if fs not in self._layers:
            self._resolve()
            cache = self._cache_dir or default_cache_dir()
            if self._data_dir is None:
                ready = load_prepared(cache, fs)
                if ready is not None:
                    require_tools()  # prepare checks these when it runs
                    check_sandbox(ready.stack, ready.usr)
                    self._layers[fs] = ready
                    return ready
                raise UserError(
                    "intercode_bash: the file systems are prepared from the InterCode-Bash data "
                    "directory: run `adapt data prepare-bash PATH` or set ADAPT_BASH_DATA_DIR"
                )
            logger.info("intercode_bash: preparing file system %d under %s", fs, cache)
            self._layers.update(prepare(self._data_dir, cache, file_systems=[fs],
                                        progress=lambda m: logger.info("intercode_bash: %s", m)))
        return self._layers[fs]

    # -- episode -------------------------------------------------------------------------------
    def start(self, cfg: InterCodeBashConfig) -> str:
        """Start an episode from a validated config (``reset(**config)`` validates first)."""
        layers = self.layers(cfg.fs)
        if self._sandbox is not None:
            self._sandbox.close()
        self._sandbox = self._new_sandbox(layers)
        self._config = cfg
        self._last_output = None
        self._last_command = None
        self._last_exit = None
        self._failed_observation = None
        self._done = False
        return self.task_observation(cfg.question)

    def step(self, action: str) -> StepResult:
        cfg = self._require_config()
        if self._done:
            return StepResult(ALREADY_SUBMITTED, 0.0, True)
        text = action.strip()
        if text.lower().startswith("think:"):
            return StepResult("OK.")
        if _SUBMIT.fullmatch(text):
            return self._submit(cfg)
        m = _EXECUTE.fullmatch(text)
        if m is None:
            return StepResult(INTERCODE_INVALID if cfg.observation == "intercode"
                              else INVALID_ACTION)
        command = m.group(1).strip()
        if not command:
            return StepResult("The command is empty; write execute[<bash command>]. "
                              "[exit status 2]")
        return StepResult(self._execute(cfg, command))

    def _execute(self, cfg: InterCodeBashConfig, command: str) -> str:
        if self._sandbox is None:
            raise RuntimeError("intercode_bash: step() before reset()")
        result = self._sandbox.run(command)
        self._last_output = TIMED_OUT if result.timed_out else result.text
        self._last_command = " ".join(command.split())
        self._last_exit = result.exit_code
        if cfg.observation == "intercode":
            observation = self._last_output[:INTERCODE_MAX_CHARS]
        else:
            observation = format_output(result)
        failed = result.timed_out or result.truncated or bool(result.exit_code)
        self._failed_observation = observation if failed else None
        return observation

    def run_gold(self, cfg: InterCodeBashConfig) -> tuple[Sandbox, str]:
        """A fresh sandbox of the task's file system after the gold command, and its output."""
        layers = self.layers(cfg.fs)
        sandbox = self._new_sandbox(layers)
        result = sandbox.run(cfg.gold_command, cwd="/")
        return sandbox, (TIMED_OUT if result.timed_out else result.text)

    def _submit(self, cfg: InterCodeBashConfig) -> StepResult:
        agent_box = self._sandbox
        if agent_box is None:
            raise RuntimeError("intercode_bash: submit before reset()")
        self._done = True
        layers = self.layers(cfg.fs)
        gold_box, gold_output = self.run_gold(cfg)
        try:
            agent = parse_status(status_text(status(layers.manifest, agent_box.upper,
                                                    layers.stack)))
            gold = parse_status(status_text(status(layers.manifest, gold_box.upper,
                                                   layers.stack)))
            agent_view = (agent_box.upper, *layers.stack)
            gold_view = (gold_box.upper, *layers.stack)

            def agrees(path: str) -> bool:
                return _md5_view(agent_view, path) == _md5_view(gold_view, path)

            score = intercode_reward(agent, gold, self._last_output, gold_output, agrees)
        finally:
            gold_box.close()
        info: dict[str, Any] = {"success": score.reward == 1.0, **score.info()}
        what = ("without running a command" if self._last_output is None
                else "the file system and the output of your last command")
        return StepResult(f"Submitted {what}. Reward: {score.reward:g}", score.reward, True, info)

    def _require_config(self) -> InterCodeBashConfig:
        if self._config is None or self._sandbox is None:
            raise UserError("intercode_bash: call reset(fs=..., question=..., gold=...) before "
                            "step()")
        return self._config

    # -- protocol ------------------------------------------------------------------------------
    @property
    def goal(self) -> str:
        return "" if self._config is None else self._config.question

    @property
    def cwd(self) -> str:
        """The working directory of the next command."""
        return "/" if self._sandbox is None else self._sandbox.cwd

    def task_observation(self, goal: str) -> str:
        return f"Task: {goal}"

    def salient_state(self) -> str | None:
        if self._config is None:
            return None
        parts = [f"Working directory: {self.cwd}."]
        if self._last_command is not None:
            command = self._last_command
            if len(command) > 120:
                command = command[:120] + "..."
            status_note = ("timed out" if self._last_exit is None
                           else f"exit status {self._last_exit}")
            parts.append(f"Last command: {command} ({status_note}).")
            output = (self._last_output or "").strip()
            if output:
                if len(output) > MAX_OUTPUT_IN_STATE:
                    output = output[:MAX_OUTPUT_IN_STATE] + "..."
                parts.append(f"Last output: {output}")
        return " ".join(parts)

    def current_prompt_set(self) -> str | None:
        """``prompts="paper"``: InterCode's ReAct template (``executor``)."""
        return None if self._config is None else self._config.prompts

    def is_failure(self, observation: str) -> bool:
        if self._failed_observation is not None and observation == self._failed_observation:
            return True  # also in the 'intercode' format, which shows no exit status
        return (bool(_FAILED.search(observation)) or observation.startswith("Invalid action")
                or observation == INTERCODE_INVALID)

    def close(self) -> None:
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.close()


def _md5_view(layers: tuple[Path, ...], rel: str) -> str:
    """What ``md5sum rel`` (run at /) reports in the overlay of ``layers``, as a comparable
    string: the content's md5, or the kind of error (missing, folder, special file)."""
    parts: deque[str] = deque(p for p in rel.split("/") if p)
    done: list[str] = []
    hops = 0
    while parts:
        part = parts.popleft()
        if part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = "/".join([*done, part])
        if done[:1] == ["usr"] or candidate == "usr":
            return "outside"  # the tools: never a task's output
        where = lookup(layers, candidate)
        if where is None:
            return "missing"
        if where.is_symlink():
            hops += 1
            if hops > 40:
                return "loop"
            target = os.readlink(where)
            if target.startswith("/"):
                done = []
            parts.extendleft(reversed([p for p in target.split("/") if p]))
            continue
        done.append(part)
    if not done:
        return "folder"
    where = lookup(layers, "/".join(done))
    if where is None:
        return "missing"
    st = os.lstat(where)
    if stat.S_ISDIR(st.st_mode):
        return "folder"
    if not stat.S_ISREG(st.st_mode):
        return "special"
    h = hashlib.md5(usedforsecurity=False)
    with open(where, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
