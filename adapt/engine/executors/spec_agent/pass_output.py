"""PASS (Plan-Act-Summarize-Solve): the summarizer, and the choice between its summary and the
raw action results.

After a batch of actions the summarizer (role ``summarizer``, the paper's figure 7 format:
``Statements`` / ``Context`` / ``Goal`` / ``Summary:``) condenses the results with respect to the
question and the sub-goal (the ``Plan`` text). What the agent gets as its ``[Summary]`` is set
by ``ExecutorConfig.pass_output``:

- ``summary`` / ``raw``: always the summary / always the raw results as a numbered list;
- ``logprob``: the paper's rule. Each candidate ``y`` is scored by the executor model as a
  continuation of the agent's context ``x`` (the prompt and trace up to ``[Summary]``) with the
  length-normalised log-probability ``sum_i log p(y_i | x, y_<i) / ((5 + |y|)^a / 6^a)``
  (Wu et al. 2016), ``a = ALPHA = 0.6``, ``|y|`` in tokens; the higher score wins. It needs a
  model with ``async score(prompt, continuation) -> list[float] | None`` (the token
  log-probabilities of ``continuation``; ``OpenAICompletionModel`` has one). When the model
  has none or returns ``None``, the ``shorter`` rule decides and the step records why;
- ``shorter``: the summary when it has fewer characters than the raw results, else the raw
  results (a summary that does not condense is not worth the risk of its errors);
- ``auto`` (default): ``logprob`` when the executor model has ``score``, else ``shorter``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from adapt.llm.base import can_score

log = logging.getLogger(__name__)

#: the length-penalty exponent of the logprob rule (the paper's alpha; Wu et al. use 0.6-0.7)
ALPHA = 0.6
PassOutput = Literal["auto", "logprob", "summary", "raw", "shorter"]


def raw_results(observations: Sequence[str]) -> str:
    """The results as the paper's ablation gives them: a numbered list."""
    return "\n".join(f"{i}. {obs.strip()}" for i, obs in enumerate(observations, start=1))


def summarizer_prompt(question: str, goal: str, observations: Sequence[str]) -> str:
    statements = " ".join(obs.strip() for obs in observations if obs.strip())
    return ("Summarize the statements with respect to the context and the goal, in one or two "
            "sentences. Keep every number and name the goal needs.\n\n"
            f"Statements: {statements}\n"
            f"Context: {question.strip()}\n"
            f"Goal: {goal.strip()}\n"
            "Summary:")


def normalized_score(logprobs: Sequence[float], alpha: float = ALPHA) -> float:
    """``sum(logprobs) / ((5 + n)^alpha / 6^alpha)``, n = the number of tokens."""
    penalty: float = ((5.0 + len(logprobs)) ** alpha) / (6.0 ** alpha)
    return float(sum(logprobs)) / penalty


@dataclass(slots=True)
class Choice:
    output: str  # what the agent gets
    chosen: Literal["summary", "raw"]
    rule: Literal["logprob", "summary", "raw", "shorter"]
    scores: dict[str, float] = field(default_factory=dict)
    fallback: str | None = None  # why the logprob rule was not used

    def extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pass_output": self.chosen, "rule": self.rule}
        if self.scores:
            out["scores"] = dict(self.scores)
        if self.fallback:
            out["fallback"] = self.fallback
        return out


def _shorter(summary: str, raw: str) -> Literal["summary", "raw"]:
    return "summary" if summary.strip() and len(summary) < len(raw) else "raw"


Scorer = Callable[[str, str], Awaitable[list[float] | None]]


async def choose(setting: PassOutput, model: Any, context: str, summary: str,
                 raw: str, scorer: Scorer | None = None) -> Choice:
    """Pick the summary or the raw results under ``setting`` (see the module docstring).

    ``scorer(prompt, continuation)`` scores with ``model`` (default: ``model.score``; the
    executor passes one that records the call in the tree)."""
    texts = {"summary": summary, "raw": raw}
    if setting in ("summary", "raw"):
        chosen: Literal["summary", "raw"] = "summary" if setting == "summary" else "raw"
        if chosen == "summary" and not summary.strip():
            return Choice(raw, "raw", "summary", fallback="the summary was empty")
        return Choice(texts[chosen], chosen, setting)
    fallback: str | None = None
    if setting == "shorter":
        pass
    elif not can_score(model):
        if setting == "logprob":
            fallback = f"model {getattr(model, 'name', model)!r} cannot score continuations"
    else:
        try:
            score: Scorer = scorer or model.score
            # one after the other: recorded calls keep one order, so a resumed task replays them
            s_lp = await score(context, summary)
            r_lp = await score(context, raw)
        except Exception as exc:  # scoring is an optimisation: never fail the run for it
            log.warning("PASS: scoring the summary and raw results failed: %s", exc)
            s_lp, r_lp = None, None
        if s_lp and r_lp:
            scores = {"summary": normalized_score(s_lp), "raw": normalized_score(r_lp)}
            chosen = "summary" if scores["summary"] >= scores["raw"] else "raw"
            return Choice(texts[chosen], chosen, "logprob", scores)
        fallback = "the model returned no log-probabilities"
    chosen = _shorter(summary, raw)
    return Choice(texts[chosen], chosen, "shorter", fallback=fallback)
