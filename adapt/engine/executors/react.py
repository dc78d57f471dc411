"""The ReAct executor: one line per LLM call, thoughts get ``OK.``, actions go to the env.

Success: the environment gives reward > 0, or a thought says the task is completed.
Failure: a thought says the task failed; ``patience`` consecutive steps whose observation is a
failure (as the environment defines it) or ``OK.``; or ``max_steps`` LLM calls used up.
"""

from __future__ import annotations

import re

from adapt.engine.decoding import executor_monitor, generate
from adapt.engine.executors.base import THOUGHT_OK, ExecutionResult, parse_line, reward_outcome
from adapt.engine.prompts import render, trajectory_line
from adapt.engine.runtime import Run
from adapt.engine.tree import Node, Step
from adapt.llm.base import ChatRequest

_COMPLETED = re.compile(r"task\s+completed", re.IGNORECASE)
_FAILED = re.compile(r"task\s+failed", re.IGNORECASE)


class ReActExecutor:
    def __init__(self, run: Run, *, max_steps: int | None = None) -> None:
        self.run = run
        cfg = run.config.executor
        self.max_steps = max_steps or cfg.max_steps or run.env.default_max_steps
        self.patience = cfg.patience
        #: the ADaPT TextCraft code reads the verdict in action lines too (profile paper)
        self.any_line = cfg.self_assessment == "any_line"
        self.monitor = executor_monitor(run.env)

    async def execute(self, node: Node, task: str, extra_context: str | None = None) -> ExecutionResult:
        run, env = self.run, self.run.env
        context = run.context if extra_context is None else "\n".join(
            x for x in (run.context, extra_context) if x
        )
        header = render(env, "executor", task=task, context=context)
        trajectory: list[str] = []
        bad_streak = 0
        best_reward = 0.0
        for index in range(1, self.max_steps + 1):
            request = ChatRequest(
                prompt=header + "".join(trajectory) + "> ",
                stop=["\n"],
                max_tokens=run.config.executor.max_tokens,
                temperature=run.config.executor.temperature,
                role="executor",
            )
            text, generation = await generate(run, run.executor_model, request, node,
                                              self.monitor)
            line = parse_line(text)
            reward, done = 0.0, False
            if line.lower().startswith("think:"):
                kind, observation = "thought", THOUGHT_OK
            else:
                kind = "action"
                result = env.step(line)
                observation, reward, done = result.observation, float(result.reward), result.done
            extra = ({"monitor": generation.tally.as_dict()}
                     if generation is not None and generation.tally.violations else None)
            step = Step(kind=kind, node_id=node.id, index=index, raw=text, text=line,
                        observation=observation, reward=reward, done=done, extra=extra)
            await run.add_step(node, step)
            trajectory.append(trajectory_line(line, observation))
            best_reward = max(best_reward, reward)
            ended = reward_outcome(run, reward, done, best_reward, index)
            if ended is not None:
                return ended
            if kind == "thought" or self.any_line:
                if _COMPLETED.search(line):
                    return ExecutionResult(True, True, best_reward, "completed", index)
                if _FAILED.search(line):
                    return ExecutionResult(False, False, best_reward, "failed", index)
            bad = observation == THOUGHT_OK or env.is_failure(observation)
            bad_streak = bad_streak + 1 if bad else 0
            if bad_streak >= self.patience:
                return ExecutionResult(False, None, best_reward, "patience", index)
        return ExecutionResult(False, None, best_reward, "max_steps", self.max_steps)
