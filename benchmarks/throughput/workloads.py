"""What the throughput bench's tasks are (``--workload``): the environment, the run config, the
model the simulator's server answers them with, and what to call it in the output.

- ``textcraft`` (the default): TextCraft tasks under ADaPT (``d_max`` 4) with the text
  executor, answered by the simulated TextCraft model.
- ``tools``: the same tasks with the native tool-calling executor (``executor.kind: tools``):
  each call is a chat request offering TextCraft's tools, which the same simulated model
  answers with a tool call.
- ``mcp``: tasks in the mcp environment with the tools executor (``react``), each on its own
  npm filesystem server process and copy of MCPMark's ``desktop_template``, answered by a
  scripted stand-in (:mod:`benchmarks.throughput.mcp_standin`; no simulated model plays MCP).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adapt.engine import RunConfig
from benchmarks.throughput import mcp_standin

SIM_SPEC = "sim:textcraft?capability=1"


@dataclass(frozen=True)
class Workload:
    name: str
    environment: str
    #: the model name sent to the simulator's server
    model: str
    run_config: RunConfig
    #: what answers the tasks, as the output says
    answered_by: str
    #: ``--tasks`` when not given
    default_tasks: int = 200
    #: a module the simulator's server imports (its ``register()``) before serving
    server_setup: str | None = None
    #: the task's ``environment_config`` besides its seed (None: ``{"seed": seed}`` only)
    fixed_config: dict[str, Any] | None = field(default=None)

    def config(self, seed: int) -> dict[str, Any]:
        return {"seed": seed} if self.fixed_config is None else dict(self.fixed_config)


TEXTCRAFT = Workload(
    "textcraft", "textcraft", SIM_SPEC, RunConfig(d_max=4),
    f"simulated TextCraft model ({SIM_SPEC}), text executor")
TOOLS = Workload(
    "tools", "textcraft", SIM_SPEC, RunConfig(d_max=4, executor={"kind": "tools"}),
    f"simulated TextCraft model ({SIM_SPEC}) answering with tool calls, tools executor")
MCP = Workload(
    "mcp", "mcp", mcp_standin.SPEC,
    RunConfig(strategy="react", d_max=1, executor={"kind": "tools"}),
    f"scripted stand-in ({mcp_standin.SPEC}: a fixed plan of filesystem calls, not a model), "
    "tools executor, one npm filesystem MCP server process per task",
    default_tasks=20, server_setup="benchmarks.throughput.mcp_standin",
    fixed_config=mcp_standin.task_config())

WORKLOADS = {w.name: w for w in (TEXTCRAFT, TOOLS, MCP)}


def find_workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"workload must be one of {', '.join(WORKLOADS)}, not {name!r}") from None
