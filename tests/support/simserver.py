"""The simulator's OpenAI-compatible server on an ephemeral loopback port, for tests."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx

from adapt.sim.server import background_server, create_app


@dataclass
class SimServer:
    base_url: str  # http://127.0.0.1:PORT/v1
    stack: ExitStack = field(repr=False)

    @property
    def url(self) -> str:
        return self.base_url.removesuffix("/v1")

    def log(self) -> dict[str, Any]:
        data: dict[str, Any] = httpx.get(f"{self.url}/_sim/log", timeout=5).json()
        return data

    def reset(self) -> None:
        httpx.post(f"{self.url}/_sim/reset", timeout=5).raise_for_status()


def start_sim_server(**app_options: Any) -> SimServer:
    stack = ExitStack()
    base_url = stack.enter_context(background_server(create_app(**app_options)))
    return SimServer(base_url, stack)


def stop_sim_server(sim: SimServer) -> None:
    sim.stack.close()
