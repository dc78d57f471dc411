"""The run options ``adapt run`` and the benches share: verification, constrained decoding,
act-only executors and model cascades (docs/verification.md), declared once."""

from __future__ import annotations

from typing import Annotated, Any

import typer

Verification = Annotated[str | None, typer.Option(
    "--verification", help="env: the environment checks every node's goal (default); off: "
    "the executor's claim decides (profile paper). See docs/verification.md.")]
Grammar = Annotated[bool, typer.Option(
    "--grammar/--no-grammar", help="Constrained decoding: send the environment's action and "
    "plan grammars (applied by local: models and endpoints whose server_kind is vllm or "
    "llama.cpp).")]
ActOnly = Annotated[bool, typer.Option(
    "--act-only", help="ReAct executor without thoughts or self-assessment.")]
CascadeMode = Annotated[str | None, typer.Option(
    "--cascade-mode", help="executor.cascade: before (the next model before "
    "decomposing, default) or after (only where decomposition failed or at d_max).")]


def run_options(*, verification: str | None = None, grammar: bool = False,
                act_only: bool = False, cascade_mode: str | None = None) -> dict[str, Any]:
    """The ``RunConfig`` fields these options set (nothing for an option left at its default,
    so a profile still fills it in). The cascade's models are not among them: they are the
    resolved config's ``models``."""
    executor = {**({"act_only": True} if act_only else {}),
                **({"cascade": cascade_mode} if cascade_mode else {})}
    return {**({} if verification is None else {"verification": verification}),
            **({"grammar": True} if grammar else {}),
            **({"executor": executor} if executor else {})}


__all__ = ["ActOnly", "CascadeMode", "Grammar", "Verification", "run_options"]
