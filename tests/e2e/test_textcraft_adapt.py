"""ADaPT with the simulated model on real TextCraft games: in process and over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft, tasks
from adapt.llm import OpenAIChatModel, OpenAICompletionModel
from adapt.llm.openai_compat.pool import closing_default_pool
from adapt.sim import from_spec
from tests.support.simserver import SimServer, start_sim_server, stop_sim_server

SIM = "sim:textcraft?capability=1"


def sample(depth: int, n: int) -> list[dict[str, object]]:
    chosen = [t for t in tasks("all") if t.depth == depth]
    step = max(1, len(chosen) // n)
    return [t.config for t in chosen[::step][:n]]


async def success_rate(configs: list[dict[str, object]], spec: str, d_max: int) -> float:
    model = from_spec(spec)
    wins = 0
    for cfg in configs:
        result = await run_task(TextCraft(), cfg, RunConfig(d_max=d_max), model)
        wins += result.reward > 0
    return wins / len(configs)


@pytest.mark.parametrize("depth", [2, 3])
async def test_adapt_with_a_weak_executor_solves_most_games(depth: int) -> None:
    rate = await success_rate(sample(depth, 25), SIM, d_max=4)
    assert rate >= 0.8, f"depth {depth}: success {rate:.0%}"


async def test_the_executor_alone_fails_beyond_its_capability() -> None:
    assert await success_rate(sample(2, 10), SIM, d_max=1) == 0.0
    assert await success_rate(sample(2, 10), "sim:textcraft?capability=2", d_max=1) == 1.0


async def test_decomposition_depth_grows_with_recipe_depth() -> None:
    model = from_spec(SIM)
    depths = {}
    for depth in (2, 3):
        used = []
        for cfg in sample(depth, 8):
            result = await run_task(TextCraft(), cfg, RunConfig(d_max=4), model)
            if result.reward > 0:
                used.append(result.max_depth)
        depths[depth] = sum(used) / len(used)
    assert depths[3] > depths[2] >= 2


@pytest.fixture(scope="module")
def sim_server() -> Iterator[SimServer]:
    server = start_sim_server()
    yield server
    stop_sim_server(server)


@pytest.mark.parametrize("backend", [OpenAIChatModel, OpenAICompletionModel])
async def test_adapt_over_http_through_the_openai_client(
    sim_server: SimServer, backend: type[OpenAIChatModel] | type[OpenAICompletionModel]
) -> None:
    sim_server.reset()
    model = backend(SIM, base_url=sim_server.base_url, api_key="sim", max_retries=0)
    sink = MemorySink()
    result = await closing_default_pool(
        run_task(TextCraft(), {"seed": 5}, RunConfig(d_max=4), model, sink=sink))
    assert result.status == "succeeded" and result.reward == 1.0
    assert max(n.depth for n in sink.nodes.values()) > 1
    # usage comes from the server's responses, every call reached the server once
    assert all(not c.usage_estimated and c.prompt_tokens > 0 for c in sink.calls)
    log = sim_server.log()
    assert log["counters"]["requests"] == len(sink.calls)
    assert [e["completion"] for e in log["entries"]] == [c.completion for c in sink.calls]
