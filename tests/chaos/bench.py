"""Print the chaos figures: ``python -m tests.chaos.bench [SCENARIO ...]``.

Runs each named scenario (all by default) against private PostgreSQL and Redis servers and
prints, per scenario, the tasks that completed as an uninterrupted run would, the final
statuses, the calls paid twice, the recovery time after the fault cleared and the worker exits.
Goal: every task completed, no worker exit, re-paid calls at most the calls in flight at the
fault.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import tempfile
from pathlib import Path

from tests.chaos.scenarios import SCENARIOS, servers, stack


async def main(names: list[str], directory: Path) -> None:
    with servers(directory) as (pg, redis):
        for name in names:
            spec = SCENARIOS[name]
            async with stack(pg, redis, directory, **spec.stack) as st:
                fig = await spec.run(st, name)
            print(fig.line(), flush=True)
            for p in fig.problems[:5]:
                print(f"    {p[:240]}", flush=True)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS),
                        help=f"some of: {', '.join(SCENARIOS)}")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("ADAPT_ALLOW_REMOTE_LLM", "0")
    with tempfile.TemporaryDirectory(prefix="adapt-chaos-") as tmp:
        asyncio.run(main(args.scenarios, Path(tmp)))


if __name__ == "__main__":
    cli()
