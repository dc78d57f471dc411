"""TextCraft speed benchmark: recipe-book load (in a fresh process), ``reset`` and ``step``.

Run ``python -m benchmarks.textcraft_speed`` for a small table. Targets: the recipe book loads
in well under a second, ``reset`` takes under 5 ms and ``step`` under 50 microseconds.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time

logger = logging.getLogger(__name__)

_LOAD_SCRIPT = """
import json, time
t0 = time.perf_counter()
from adapt.envs.textcraft.book import load_book
t1 = time.perf_counter()
load_book()
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1}))
"""


def measure_load() -> dict[str, float]:
    """Import time and recipe-book build time, measured in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _LOAD_SCRIPT], capture_output=True, text=True, check=True
    )
    data: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def run(n_resets: int = 200, n_steps: int = 20000) -> dict[str, float]:
    """Measure everything; returns seconds for load, milliseconds for reset, microseconds for
    step (means, plus the slowest reset)."""
    from adapt.envs.textcraft import TextCraft
    from adapt.envs.textcraft.solver import solve

    load = measure_load()
    env = TextCraft()

    reset_times: list[float] = []
    for seed in range(n_resets):
        t0 = time.perf_counter()
        env.reset(seed=seed)
        reset_times.append(time.perf_counter() - t0)

    # step workload: solver trajectories plus a few failing actions, replayed game by game
    episodes: list[tuple[int, list[str]]] = []
    total = 0
    seed = 0
    while total < n_steps:
        env.reset(seed=seed)
        actions = ["inventory", "get 1 stick", "craft 1 stick using 2 planks", *solve(env)]
        episodes.append((seed, actions))
        total += len(actions)
        seed += 1
    step_time = 0.0
    steps = 0
    for seed, actions in episodes:
        env.reset(seed=seed)
        t0 = time.perf_counter()
        for action in actions:
            env.step(action)
        step_time += time.perf_counter() - t0
        steps += len(actions)

    return {
        "import_s": load["import_s"],
        "load_s": load["load_s"],
        "reset_ms_mean": 1e3 * sum(reset_times) / len(reset_times),
        "reset_ms_max": 1e3 * max(reset_times),
        "step_us_mean": 1e6 * step_time / steps,
        "steps": float(steps),
    }


def main() -> None:
    results = run()
    rows = [
        ("import textcraft (fresh process)", f"{results['import_s'] * 1e3:.1f} ms", "-"),
        ("recipe book load (fresh process)", f"{results['load_s'] * 1e3:.1f} ms", "< 1000 ms"),
        ("reset (mean)", f"{results['reset_ms_mean']:.3f} ms", "< 5 ms"),
        ("reset (max)", f"{results['reset_ms_max']:.3f} ms", "-"),
        (f"step (mean of {int(results['steps'])})", f"{results['step_us_mean']:.2f} us", "< 50 us"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>12}  target")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>12}  {target}")


if __name__ == "__main__":
    main()
