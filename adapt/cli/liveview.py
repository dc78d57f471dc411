"""A sink that shows the tree growing live in the terminal (rich), and result summaries."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from adapt.engine.events import Event, MemorySink
from adapt.engine.tree import Node, TaskResult

STYLE = {
    "pending": ("·", "dim"),
    "running": ("▶", "bold yellow"),
    "succeeded": ("✔", "green"),
    "failed": ("✘", "red"),
    "skipped": ("↷", "dim"),
    "cancelled": ("■", "magenta"),
}


VERDICT_STYLE = {"confirmed": "green", "refuted": "red", "unknown": "dim"}


def claim_vs_verdict(node: Node) -> str:
    """``claim: success, env: refuted (holds 2 of 6 oak planks)`` for a task node."""
    claim = {True: "success", False: "failure", None: "none"}[node.claim]
    env = node.verdict or "not checked"
    evidence = f" ({node.evidence})" if node.evidence else ""
    return f"[claim: {claim}, env: {env}{evidence}]"


def node_label(node: Node, sink: MemorySink) -> Text:
    icon, style = STYLE[node.status]
    text = Text(f"{icon} ", style=style)
    if node.kind == "group":
        text.append(f"[{(node.logic or 'and').upper()}] ", style="cyan")
        text.append(node.goal, style="italic")
        return text
    text.append(f"d{node.depth} ", style="dim")
    if node.label:
        text.append(f"{node.label}: ", style="cyan")
    text.append(node.goal, style=style if node.status != "pending" else "")
    if node.steps_count:
        count = "1 step" if node.steps_count == 1 else f"{node.steps_count} steps"
        text.append(f"  ({count}", style="dim")
        if node.termination:
            text.append(f", executor: {node.termination}", style="dim")
        text.append(")", style="dim")
    if node.verdict is not None or node.claim is not None:
        text.append("  " + claim_vs_verdict(node), style=VERDICT_STYLE.get(node.verdict or "", "dim"))
    if node.logic and node.kind == "task":
        text.append(f"  → plan [{node.logic.upper()}]", style="cyan")
    if node.reason:
        text.append(f"  ({node.reason})", style="dim")
    if node.status == "running":
        steps = sink.steps.get(node.id)
        if steps:
            last = steps[-1]
            text.append(f"\n   > {last.text}  ⇒ {last.observation}", style="dim")
    return text


def render_tree(sink: MemorySink, title: str = "task") -> RenderableType:
    root = sink.root
    tree = Tree(Text(title, style="bold"))
    if root is None:
        return tree

    def add(parent: Tree, node: Node) -> None:
        branch = parent.add(node_label(node, sink))
        for kid in sink.children(node.id):
            add(branch, kid)

    add(tree, root)
    return tree


def render_summary(result: TaskResult, models: dict[str, str]) -> RenderableType:
    table = Table(show_header=False, box=None, padding=(0, 2))
    colour = "green" if result.status == "succeeded" else "red"
    table.add_row("status", Text(result.status, style=f"bold {colour}"))
    table.add_row("environment reward", f"{result.reward:g}")
    if result.verdict is not None:
        claimed = "success" if result.claimed_success else "failure"
        table.add_row("claim vs environment", f"{claimed} claimed, environment: {result.verdict}")
    if result.checked_subgoals:
        table.add_row("checkable sub-goals", f"{result.checkable_subgoals} of "
                      f"{result.checked_subgoals} checked")
    table.add_row("strategy", f"{result.strategy} (d_max {result.d_max})")
    for role, name in models.items():
        table.add_row(f"{role} model", name)
    table.add_row("nodes", f"{result.nodes} (deepest task depth {result.max_depth})")
    for role, usage in sorted(result.usage_by_role.items()):
        table.add_row(f"{role} LLM calls", str(usage.llm_calls))
    u = result.usage
    table.add_row("LLM calls", str(u.llm_calls))
    table.add_row("tokens", f"{u.prompt_tokens} prompt + {u.completion_tokens} completion")
    table.add_row("cost", "unknown (no price for this model)" if u.cost_usd is None
                  else f"${u.cost_usd:.4f}")
    m = result.monitor
    if m.validations:
        table.add_row("decoding monitor", f"{m.validations} checks, {m.violations} violations, "
                      f"{m.corrections} corrected")
    table.add_row("wall time", f"{result.wall_seconds:.2f} s")
    if result.error:
        table.add_row("error", Text(result.error, style="red"))
    return table


class LiveTreeSink(MemorySink):
    """A ``MemorySink`` that re-renders the tree on every event while the task runs."""

    def __init__(self, console: Console, title: str) -> None:
        super().__init__()
        self.title = title
        self.live = Live(Group(), console=console, refresh_per_second=8, transient=False)

    async def emit(self, event: Event) -> None:
        await super().emit(event)
        self.live.update(render_tree(self, self.title))

    def __enter__(self) -> LiveTreeSink:
        self.live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.live.update(render_tree(self, self.title))
        self.live.__exit__(exc_type, exc, tb)
