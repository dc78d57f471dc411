"""The spec executor's settings (``executor.kind = "spec"``): which agent, and what a PASS
agent gets after a batch of actions."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from adapt.engine.config import ExecutorConfig, PassOutput, field_info


def _loads(value: str) -> str:
    from adapt.engine.spec.model import load_spec
    from adapt.errors import UserError

    try:
        load_spec(value)
    except UserError as exc:
        raise ValueError(str(exc)) from None
    return value


#: a built-in agent's name or a specification text that loads
SpecText = Annotated[str, AfterValidator(_loads)]


class SpecConfig(ExecutorConfig):
    kind: str = field_info(ExecutorConfig, "kind", default="spec")
    spec: SpecText = Field(
        default="react",
        description="For kind 'spec': a built-in agent (react, rewoo, reflexion, cot, direct, "
        "pass) or a whole specification (s-expression or YAML).")
    pass_output: PassOutput = Field(
        default="auto",
        description="PASS agents: what the agent gets after a batch of actions. summary / raw: "
        "always the summarizer's summary / the raw results; logprob: the higher "
        "length-normalised log-probability under the executor model (the paper's rule; needs a "
        "model that can score text); shorter: the summary when it is shorter than the raw "
        "results; auto: logprob when the model can score, else shorter.")
