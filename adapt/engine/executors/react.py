"""The ReAct executor: one line per LLM call, thoughts get ``OK.``, actions go to the env.

Success: the environment gives reward > 0, or a thought says the task is completed.
Act-only (``executor.act_only``): every line goes to the environment, no self-assessment.
Numbered turns (``executor.react_format="numbered"``, InterCode's ReAct, profile paper on
InterCode): one call per turn writes ``Thought N: ...`` and ``Action N: ...`` (it stops before
``Observation N:``); when it wrote no action, a second call asks for it after ``Action N:``, as
InterCode's ``eval_react.py`` does. The action goes to the environment (a step whose ``extra``
holds the thought); no self-assessment, only the environment and the budget end the run.
Failure: a thought says the task failed; ``patience`` consecutive steps whose observation is a
failure (as the environment defines it) or ``OK.``; or ``max_steps`` LLM calls used up. (The
rules are the shared episode's, ``adapt.engine.executors.episode``.)
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import ClassVar

from pydantic import Field

from adapt.engine.config import (
    ExecutorConfig,
    ReactFormat,
    SelfAssessmentField,
    config_as,
)
from adapt.engine.decoding import env_grammar, executor_monitor, generate
from adapt.engine.executors.base import THOUGHT_OK, parse_line
from adapt.engine.executors.episode import Episode, EpisodeExecutor, Turn, declaration
from adapt.engine.gated import act
from adapt.engine.prompts import render, trajectory_line
from adapt.engine.runtime import Run
from adapt.llm.base import ChatRequest


class ReActConfig(ExecutorConfig):
    """The ReAct executor's settings (``executor.kind = "react"``)."""

    act_only: bool = Field(
        default=False,
        description="ReAct executor: actions only, no thoughts and no self-assessment; the "
        "environment (reward) and verification decide when the node is done.")
    react_format: ReactFormat = Field(
        default="line",
        description="ReAct executor: 'line': one line per LLM call, an action or a think: "
        "thought (observation OK.); 'numbered': InterCode's turns, one call writes 'Thought N:' "
        "and 'Action N:' and the observation follows as 'Observation N:' (profile 'paper' on "
        "InterCode-SQL and -Bash).")
    self_assessment: SelfAssessmentField = "thought"


class ReActExecutor(EpisodeExecutor):
    config_model: ClassVar[type[ExecutorConfig]] = ReActConfig

    def __init__(self, run: Run, *, max_steps: int | None = None) -> None:
        super().__init__(run, max_steps=max_steps)
        self.cfg = config_as(run.config.executor, ReActConfig)
        #: the ADaPT TextCraft code reads the verdict in action lines too (profile paper)
        self.any_line = self.cfg.self_assessment == "any_line"
        #: no claim counts: only the environment (and the budget) ends the run
        self.no_claims = self.cfg.self_assessment == "off"
        self.monitor = executor_monitor(run.env)
        #: act-only: no thoughts, no self-assessment (reward and verification end the run)
        self.act_only = self.cfg.act_only
        self.grammar = env_grammar(run, "action" if self.act_only else "react")

    async def turns(self, episode: Episode) -> AsyncGenerator[Turn, None]:
        if self.cfg.react_format == "numbered":
            async for turn in self.numbered_turns(episode):
                yield turn
            return
        run, env = self.run, self.run.env
        header = render(env, "executor", task=episode.task, context=episode.context,
                        goal=episode.node.goal)
        trajectory: list[str] = []
        while True:
            request = ChatRequest(
                prompt=header + "".join(trajectory) + "> ",
                stop=["\n"],
                max_tokens=run.config.executor.max_tokens,
                temperature=episode.temperature,
                role="executor",
                grammar=self.grammar,
            )
            text, generation = await generate(run, episode.model, request, episode.node,
                                              self.monitor)
            line = parse_line(text)
            reward, done = 0.0, False
            if line.lower().startswith("think:") and not self.act_only:
                kind, observation = "thought", THOUGHT_OK
            else:
                kind = "action"
                result = await act(run, episode.node, line)
                observation, reward, done = result.observation, float(result.reward), result.done
            extra = ({"monitor": generation.tally.as_dict()}
                     if generation is not None and generation.tally.violations else None)
            step = episode.step(kind=kind, raw=text, text=line, observation=observation,
                                reward=reward, done=done, extra=extra)
            trajectory.append(trajectory_line(line, observation))
            claims = ((kind == "thought" or self.any_line) and not self.act_only
                      and not self.no_claims)
            yield Turn([step], declared=declaration(line) if claims else None)

    async def numbered_turns(self, episode: Episode) -> AsyncGenerator[Turn, None]:
        """InterCode's ReAct turns: ``Thought N`` and ``Action N`` from one call (a second call
        for the action when the first wrote none), then ``Observation N``."""
        run, env = self.run, self.run.env
        header = render(env, "executor", task=episode.task, context=episode.context,
                        goal=episode.node.goal).rstrip("\n") + "\n"
        history = ""
        number = 0
        while True:
            number += 1
            cfg = run.config.executor
            request = ChatRequest(
                prompt=f"{header}{history}Thought {number}:",
                stop=[f"\nObservation {number}:"], max_tokens=cfg.max_tokens,
                temperature=episode.temperature, role="executor")
            raw = (await run.call(episode.model, request, episode.node)).text
            thought, marker, action = raw.strip().partition(f"\nAction {number}: ")
            if not marker:  # no action written: ask for it (InterCode's retry)
                thought = raw.strip().split("\n")[0]
                request = ChatRequest(
                    prompt=f"{header}{history}Thought {number}: {thought}\nAction {number}:",
                    stop=["\n"], max_tokens=cfg.max_tokens, temperature=episode.temperature,
                    role="executor")
                action = (await run.call(episode.model, request, episode.node)).text
            thought, action = thought.strip(), action.strip()
            result = await act(run, episode.node, action)
            observation = result.observation
            step = episode.step(kind="action", raw=raw, text=action, observation=observation,
                                reward=float(result.reward), done=result.done,
                                extra={"thought": thought})
            history += (f"Thought {number}: {thought}\nAction {number}: {action}\n"
                        f"Observation {number}: {observation}\n")
            yield Turn([step])
