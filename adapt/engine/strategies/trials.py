"""The paper's trial baselines (section 4.2): ``try_again`` and ``reflexion``. They use the same
executor as ADaPT and record everything in the same tree.

Tree shape: a root ``group`` node (logic ``or``, depth 1, never executed)
  whose children are trial ``task`` nodes labelled ``trial 1``, ``trial 2``, ... also at depth 1:
  a trial is the whole task again, not a decomposition, so ``TaskResult.max_depth`` stays 1
  (decomposition depth is only meaningful for ``adapt`` and ``plan_and_execute``). Trials are
  created one at a time (at most ``d_max``) and the loop stops at the first success, so the
  tree holds only trials that ran. Before every trial after the first (``run_task`` reset the
  environment for trial 1) the environment is reset to the task's start
  (``start_episode(run.env, run.env_config)``, the validated config) and the propagated context is cleared.
"""

from __future__ import annotations

from adapt.engine.executors.base import ExecuteOptions, ExecutionResult
from adapt.engine.node_runner import NodeRunner
from adapt.engine.prompts import render, require_template, trajectory_line
from adapt.engine.runtime import Run
from adapt.engine.tree import Node, Step
from adapt.envs.base import start_episode_async, success_reward
from adapt.llm.base import ChatRequest

#: executor temperature for ``try_again`` trials after the first (Appendix A)
RETRY_TEMPERATURE = 0.7
#: the label in front of reflections in the executor prompt
REFLECTIONS_HEADER = "Reflections from earlier failed attempts:"
#: completion limit for one reflection (1-3 sentences)
REFLECTION_MAX_TOKENS = 256


async def _reset_for_trial(run: Run) -> None:
    """Back to the task's start: fresh episode, no propagated state from earlier trials."""
    await start_episode_async(run.env, run.env_config)
    run.restart_episode()


def trial_succeeded(run: Run, result: ExecutionResult) -> bool:
    """Whether a trial succeeded: by the environment's reward when the environment gives one
    (``success_reward``; a false "Task completed!" does not count), else by the executor."""
    threshold = success_reward(run.env)
    if threshold is None:
        return result.success
    return result.reward >= threshold


def reflections_block(reflections: list[str]) -> str | None:
    if not reflections:
        return None
    return REFLECTIONS_HEADER + "\n" + "\n".join(f"- {r}" for r in reflections)


async def _trial(
    run: Run,
    runner: NodeRunner,
    root: Node,
    number: int,
    task: str,
    options: ExecuteOptions,
) -> tuple[Node, ExecutionResult]:
    """One whole-task executor run as a ``trial N`` child of ``root`` (``run_task`` already
    reset the environment for trial 1)."""
    if number > 1:
        await _reset_for_trial(run)
    node = await run.new_node(kind="task", parent_id=root.id, position=number - 1, depth=1,
                              goal=root.goal, label=f"trial {number}")
    return node, await runner.execute(node, task, options)


async def _trials_root(run: Run, goal: str) -> Node:
    root = await run.new_node(kind="group", goal=goal, depth=1, logic="or")
    await run.update(root, status="running")
    return root


async def try_again_strategy(run: Run, goal: str, task: str) -> Node:
    """Up to ``d_max`` independent executor trials of the whole task; success at the first.

    Root: a ``group`` node (logic ``or``, depth 1); children: ``task`` nodes labelled
    ``trial N`` at depth 1, each after resetting the environment to the task's start. Trial 1
    uses the configured executor temperature, later trials 0.7 (Appendix A), so they can differ.
    A trial succeeds by the environment's reward when the environment gives one (see
    :func:`trial_succeeded`): a false "Task completed!" does not stop the trials. Each trial
    node records its reward and the executor's self-assessment; the root's reward is the best
    trial's.
    """
    runner = NodeRunner(run)
    root = await _trials_root(run, goal)
    ok = False
    best = 0.0
    for number in range(1, run.config.d_max + 1):
        options = ExecuteOptions(temperature=None if number == 1 else RETRY_TEMPERATURE)
        node, result = await _trial(run, runner, root, number, task, options)
        best = max(best, result.reward)
        succeeded = trial_succeeded(run, result)
        await runner.finish(node, succeeded)
        if succeeded:
            ok = True
            break
    await run.update(root, reward=best)
    await runner.finish(root, ok)
    return root


async def reflect(run: Run, node: Node, task: str, context: str | None,
                  steps: list[Step]) -> str:
    """One ``reflection`` call on a failed trial: 1-3 sentences, folded onto one line."""
    trajectory = "".join(trajectory_line(s.text, s.observation) for s in steps)
    prompt = render(run.env, "reflection", task=task, context=context, trajectory=trajectory)
    cfg = run.config.planner
    request = ChatRequest(prompt=prompt, max_tokens=min(cfg.max_tokens, REFLECTION_MAX_TOKENS),
                          temperature=cfg.temperature, role="reflection")
    response = await run.call(run.planner_model, request, node)
    paragraph = response.text.strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    return text or "The attempt failed without a clear reason; try a different approach."


async def reflexion_strategy(run: Run, goal: str, task: str) -> Node:
    """Reflexion: up to ``d_max`` trials; after a failed one, a reflection for the next ones.

    Same tree as ``try_again`` (``or`` group root, ``trial N`` children at depth 1, environment
    reset before each trial). After a failed trial (except the last) one LLM call with role
    ``reflection`` (the planner model, template ``reflection``: task, earlier reflections as
    ``$context``, the failed trajectory as ``$trajectory``) writes 1-3 sentences. The reflection
    is stored as the failed trial's ``context_out`` (what the trial hands on) and the call is
    recorded on that node. Later trials get every reflection so far in their executor prompt,
    under ``Reflections from earlier failed attempts:``; their ``context_in`` shows that text.
    The executor temperature is the configured one for every trial. A trial succeeds by the
    environment's reward when the environment gives one (:func:`trial_succeeded`), so a trial
    that claims success without reward is reflected on too.
    """
    require_template(run.env, "reflection", "reflexion")
    runner = NodeRunner(run)
    root = await _trials_root(run, goal)
    reflections: list[str] = []
    ok = False
    best = 0.0
    for number in range(1, run.config.d_max + 1):
        context = reflections_block(reflections)
        node, result = await _trial(run, runner, root, number, task,
                                    ExecuteOptions(extra_context=context))
        best = max(best, result.reward)
        if trial_succeeded(run, result):
            await runner.finish(node, True)
            ok = True
            break
        await run.update(node, status="failed", success=False)
        if number < run.config.d_max:
            reflection = await reflect(run, node, task, context, result.trajectory)
            reflections.append(reflection)
            await run.update(node, context_out=reflection)
    await run.update(root, reward=best)
    await runner.finish(root, ok)
    return root
