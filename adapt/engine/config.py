"""Run configuration: plain data the engine takes (the service and CLI build it)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from adapt.engine.budget import Budget
from adapt.engine.executors.registry import available_executors

#: the range of ``RunConfig.d_max`` (the API, the CLI options and the bench grids read it here)
D_MAX_RANGE: tuple[int, int] = (1, 8)
#: the largest ``RunConfig.react_steps`` (the most executor steps x the deepest d_max)
REACT_STEPS_MAX = 4000


class ExecutorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(
        default="react",
        description="Executor design: react, stateact, stateflow, spec (an agent from a "
        "declarative behaviour specification, see `spec`), tools (the environment's actions "
        "as function tools of a chat model, see docs/tools.md) or one a plug-in package "
        "registers (entry point group `adapt.executors`).")
    spec: str = Field(
        default="react",
        description="For kind 'spec': a built-in agent (react, rewoo, reflexion, cot, direct, "
        "pass) or a whole specification (s-expression or YAML).")
    pass_output: Literal["auto", "logprob", "summary", "raw", "shorter"] = Field(
        default="auto",
        description="PASS agents: what the agent gets after a batch of actions. summary / raw: "
        "always the summarizer's summary / the raw results; logprob: the higher "
        "length-normalised log-probability under the executor model (the paper's rule; needs a "
        "model that can score text); shorter: the summary when it is shorter than the raw "
        "results; auto: logprob when the model can score, else shorter.")
    max_steps: int | None = Field(
        default=None, ge=1, le=500,
        description="LLM calls per executor run; default from the environment (TextCraft: 20).",
    )
    patience: int | None = Field(
        default=8, ge=1, le=500,
        description="Consecutive failed or 'OK.' observations after which the run fails "
        "(null: no such rule, as StateAct's code under profile 'paper').",
    )
    repeat_limit: int | None = Field(
        default=None, ge=1, le=500,
        description="StateAct executor: the run fails when the model writes the same step this "
        "many times in a row after the first (not executed again); null: no such rule. "
        "Profile 'paper' on ALFWorld: 5, as StateAct's code.",
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=128, ge=1, le=8192, description="Per executor step.")
    act_only: bool = Field(
        default=False,
        description="ReAct executor: actions only, no thoughts and no self-assessment; the "
        "environment (reward) and verification decide when the node is done.")
    models: list[Annotated[str, Field(min_length=1, max_length=1000)]] = Field(
        default_factory=list, max_length=8,
        description="Model cascade: executor model specs in order (e.g. a small model, then "
        "a larger one). A task node the first fails is retried with the next (see `cascade`), "
        "each attempt a child node labelled `attempt N: <model>`. Empty: the one executor "
        "model (`executor.model`); a list of one is the same as that model.")
    cascade: Literal["before", "after"] = Field(
        default="before",
        description="When the next model of `models` gets a failed node: 'before' its "
        "decomposition (escalate first, decompose when every model failed); 'after' it "
        "(decompose with the first model, escalate only where decomposition failed or "
        "cannot happen, at d_max).")
    react_format: Literal["line", "numbered"] = Field(
        default="line",
        description="ReAct executor: 'line': one line per LLM call, an action or a think: "
        "thought (observation OK.); 'numbered': InterCode's turns, one call writes 'Thought N:' "
        "and 'Action N:' and the observation follows as 'Observation N:' (profile 'paper' on "
        "InterCode-SQL and -Bash).")
    self_assessment: Literal["thought", "any_line", "off"] = Field(
        default="thought",
        description="Where 'task completed' / 'task failed' count as the executor's verdict: "
        "in a thought only, in any line, actions included (the ADaPT TextCraft code; set by "
        "profile 'paper'), or nowhere: only the environment ends the run (StateAct's code; "
        "profile 'paper' with the stateact executor on ALFWorld).")

    @field_validator("models")
    @classmethod
    def _models(cls, value: list[str]) -> list[str]:
        seen: set[str] = set()
        for spec in value:
            if spec in seen:
                raise ValueError(f"model {spec!r} is listed twice; a cascade tries each model "
                                 "once")
            seen.add(spec)
        return value

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        known = available_executors()
        if value not in known:
            raise ValueError(f"unknown executor kind {value!r}; available: {', '.join(known)}")
        return value

    @field_validator("spec")
    @classmethod
    def _spec(cls, value: str) -> str:
        from adapt.engine.spec.model import load_spec
        from adapt.errors import UserError

        try:
            load_spec(value)
        except UserError as exc:
            raise ValueError(str(exc)) from None
        return value


class MonitorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=True,
        description="Enforce the executor's and planner's output format at generation time "
        "with the decoding monitor (cut at the first violation, prefix the valid next state, "
        "resume).")
    max_corrections: int = Field(
        default=3, ge=0, le=20, description="Corrections per generation before giving up.")


class PlannerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=16384)
    stop: list[Annotated[str, Field(min_length=1, max_length=32)]] = Field(
        default_factory=list, max_length=4,
        description="Stop sequences of a planner call (none by default; profile 'paper' uses a "
        "blank line on ALFWorld, as the ADaPT code).")
    propagate_context: bool = Field(
        default=True, description="Hand the propagated salient state to the planner too."
    )
    output: Literal["text", "json"] = Field(
        default="text",
        description="How the planner writes its plan: 'text' (Step N: lines and an Execution "
        "Order: line) or 'json' (a JSON object of steps and execution order, asked for as "
        "structured output where the endpoint takes a JSON schema; an answer that is not JSON "
        "is read as text). See docs/tools.md.")


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    profile: Literal["default", "paper"] = Field(
        default="default",
        description="'default': the project's improved behaviour; 'paper': the published "
        "protocols (prompts, knobs, baselines) of the papers, per environment (see "
        "docs/reproducing-the-papers.md). Settings given explicitly win over the profile's.")
    strategy: str = Field(default="adapt", max_length=64, examples=["adapt", "react"],
                          description="How the task is driven (adapt, react, ...).")
    d_max: int = Field(default=3, ge=D_MAX_RANGE[0], le=D_MAX_RANGE[1],
                       description="Maximum decomposition depth (default 3; profile 'paper': "
                       "the paper's for the environment, TextCraft 4).")
    react_steps: int | None = Field(
        default=None, ge=1, le=REACT_STEPS_MAX,
        description="Strategy react (the executor alone on the whole task): its step budget. "
        "Default: the executor's steps x d_max (the ADaPT paper's rule); profile 'paper' sets "
        "the published budget (TextCraft and ALFWorld 60, InterCode 10).")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    monitor: MonitorConfig = Field(
        default_factory=MonitorConfig,
        description="The decoding monitor on the executor's and planner's output (on by default).")
    budget: Budget = Field(default_factory=Budget)
    seed: int | None = Field(default=None, description="Passed to the models with every call.")
    verification: Literal["env", "off"] = Field(
        default="env",
        description="'env': the environment checks every task node's goal (a refuted claim "
        "fails the node, a confirmed goal ends or skips it; see docs/verification.md); 'off': "
        "the executor's claim decides (profile 'paper').")
    grammar: bool = Field(
        default=False,
        description="Constrained decoding: send the environment's grammars (valid actions for "
        "the executor, checkable plan lines for the planner) with the requests; local: models "
        "and endpoints whose server_kind is vllm or llama.cpp apply them, others ignore them.")
