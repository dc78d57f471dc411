"""Optional PNG plots of a :class:`~adapt.eval.report.BenchReport` (needs matplotlib:
``pip install 'adapt[plot]'``).

- ``success_vs_dmax.png``: success rate against d_max, one line per (strategy, model) — the
  paper's figure 4;
- ``success_by_depth.png``: success rate by recipe depth, one bar per (strategy, model) at its
  largest d_max — the paper's table 7.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from adapt.errors import UserError
from adapt.eval.report import BenchEntry, BenchReport

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SUCCESS_VS_DMAX = "success_vs_dmax.png"
SUCCESS_BY_DEPTH = "success_by_depth.png"


def require_matplotlib() -> type[Figure]:
    """matplotlib's ``Figure``; raises :class:`UserError` saying how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install matplotlib (or, in a checkout "
                        "of this project, pip install -e '.[plot]')") from None
    return Figure


def _series(report: BenchReport) -> dict[tuple[str, str], list[BenchEntry]]:
    out: dict[tuple[str, str], list[BenchEntry]] = {}
    for e in report.entries:
        out.setdefault((e.strategy, e.model), []).append(e)
    for entries in out.values():
        entries.sort(key=lambda e: e.d_max)
    return out


def _name(strategy: str, model: str, report: BenchReport) -> str:
    return strategy if len(report.models) == 1 else f"{strategy} · {model}"


def _suffix(report: BenchReport) -> str:
    return " (SIMULATED)" if report.simulated else ""


def plot_success_vs_dmax(report: BenchReport, path: Path) -> Path:
    fig = require_matplotlib()(figsize=(8, 4), dpi=120)
    ax = fig.add_subplot()
    for (strategy, model), entries in _series(report).items():
        ax.plot([e.d_max for e in entries], [100 * e.success_rate for e in entries],
                marker="o", label=_name(strategy, model, report))
    ax.set_xlabel("maximum decomposition depth d_max")
    ax.set_ylabel("success rate (%)")
    ax.set_xticks(report.d_max)
    ax.set_ylim(0, 100)
    ax.set_title(f"TextCraft ({report.split}): success vs d_max{_suffix(report)}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    return path


def plot_success_by_depth(report: BenchReport, path: Path) -> Path:
    fig = require_matplotlib()(figsize=(8, 4), dpi=120)
    ax = fig.add_subplot()
    depths = sorted({int(d) for e in report.entries for d in e.by_depth})
    series = [(key, entries[-1]) for key, entries in _series(report).items()]
    width = 0.8 / max(1, len(series))
    for i, ((strategy, model), entry) in enumerate(series):
        xs = [d + (i - (len(series) - 1) / 2) * width for d in depths]
        ys = [100 * entry.by_depth[str(d)].success_rate if str(d) in entry.by_depth else 0.0
              for d in depths]
        ax.bar(xs, ys, width=width,
               label=f"{_name(strategy, model, report)} (d_max {entry.d_max})")
    ax.set_xlabel("recipe depth")
    ax.set_ylabel("success rate (%)")
    ax.set_xticks(depths)
    ax.set_ylim(0, 100)
    ax.set_title(f"TextCraft ({report.split}): success by recipe depth{_suffix(report)}",
                 fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    return path


def write_plots(report: BenchReport, out_dir: Path) -> list[Path]:
    """Write both PNGs into ``out_dir``; raises :class:`UserError` without matplotlib."""
    require_matplotlib()
    out_dir.mkdir(parents=True, exist_ok=True)
    return [plot_success_vs_dmax(report, out_dir / SUCCESS_VS_DMAX),
            plot_success_by_depth(report, out_dir / SUCCESS_BY_DEPTH)]
