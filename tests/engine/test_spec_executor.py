"""The spec executor (kind "spec"): every shipped agent end to end on the calculator
environment with scripted models, the monitor's corrections, the rules for answers, budgets and
ADaPT on top."""

from __future__ import annotations

from typing import Any

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors import make_executor
from adapt.engine.executors.spec_agent.executor import SpecExecutor
from adapt.engine.executors.spec_agent.prompt import neutralize, select_examples
from adapt.engine.runtime import Run
from adapt.engine.spec.model import BUILTINS, Spec
from adapt.engine.spec.monitor import Monitor
from adapt.engine.tree import Step, TaskResult
from adapt.envs.calculator import PROBLEMS, Calculator
from adapt.llm.testing import ScriptedModel
from tests.engine.toy import ToyEnv

QUESTION = PROBLEMS[0].question  # 3 bags of 12 apples, 5 eaten: 31


async def run_spec(spec: str, replies: list[str], *, env: Any = None,
                   env_config: dict[str, Any] | None = None, strategy: str = "react",
                   d_max: int = 1, planner: ScriptedModel | None = None,
                   monitor: dict[str, Any] | None = None, **executor: Any,
                   ) -> tuple[TaskResult, MemorySink, ScriptedModel, Any]:
    env = env if env is not None else Calculator()
    sink = MemorySink()
    model = ScriptedModel(replies)
    config = RunConfig(strategy=strategy, d_max=d_max, monitor=monitor or {},
                       executor={"kind": "spec", "spec": spec, **executor})
    config_env = {"index": 0} if env_config is None and isinstance(env, Calculator) else (
        env_config or {})
    result = await run_task(env, config_env, config, model, planner, sink=sink)
    return result, sink, model, env


def summary(steps: list[Step]) -> list[tuple[str, str | None, str, str]]:
    return [(s.kind, (s.extra or {}).get("state"), s.text, s.observation) for s in steps]


def test_the_executor_is_registered_as_kind_spec() -> None:
    env = Calculator()
    run = Run(env, RunConfig(executor={"kind": "spec", "spec": "pass"}), ScriptedModel([]))
    executor = make_executor(run)
    assert isinstance(executor, SpecExecutor) and executor.spec.name == "pass-agent"
    assert executor.max_steps == Calculator.default_max_steps


def test_generation_stops_at_the_first_state_unless_the_behaviour_returns_to_it() -> None:
    def stop(spec: str) -> list[str]:
        config = RunConfig(executor={"kind": "spec", "spec": spec})
        return SpecExecutor(Run(Calculator(), config, ScriptedModel([]))).stop

    assert stop("react") == ["[Question]"]
    assert stop("name: again\nstates: {Q: {text: 'Q:'}, A: {text: 'A:'}}\n"
                "behavior: (next Q (until (next A Q) A))") == []


@pytest.mark.parametrize("name", BUILTINS)
def test_every_builtin_finds_its_own_example(name: str) -> None:
    monitor = Monitor(Spec.builtin(name))
    examples = select_examples(monitor, Calculator().prompt_template("spec_examples"))
    assert len(examples) == 1
    used = set(monitor.check(examples[0], final=True).states)
    assert used == {s.name for s in monitor.spec.states}


# -- the six agents, end to end ------------------------------------------------------------------
async def test_react() -> None:
    result, sink, model, _ = await run_spec("react", [
        "[Thought] 3 bags of 12 apples, minus the 5 eaten.\n[Action] calculator\n"
        "[Action Input] 3 * 12 - 5\n",
        "[Final Thought] He has 31 apples left.\n[Answer] 31",
    ])
    first, second = model.prompts
    assert first.endswith(f"Now your task.\n[Question] {QUESTION}\n")
    assert "[Observation] what the action returned (supplied for you" in first
    assert "calculator <expression>" in first  # the environment's actions
    assert "[Action Input] 5 * 6 + 4\n[Observation] 34" in first  # the react example only
    assert "[Summary]" not in first and "[Proposed Answer]" not in first
    assert "write only the answer" in first  # the answer is checked by the environment
    assert second == (first + "[Thought] 3 bags of 12 apples, minus the 5 eaten.\n"
                      "[Action] calculator\n[Action Input] 3 * 12 - 5\n[Observation] 31\n")
    assert all(r.stop == ["[Question]", "[Observation]"] and r.role == "executor"
               for r in model.requests)
    assert summary(sink.steps[1]) == [
        ("thought", "Tht", "3 bags of 12 apples, minus the 5 eaten.", ""),
        ("action", "Obs", "calculator 3 * 12 - 5", "31"),
        ("thought", "Final-Tht", "He has 31 apples left.", ""),
        ("action", "Ans", "answer 31", "Correct answer."),
    ]
    node = sink.nodes[1]
    assert (node.termination, node.success, node.reward, node.steps_count) == ("reward", True,
                                                                              1.0, 4)
    assert result.status == "succeeded" and result.reward == 1.0
    assert result.monitor.validations == 2 and result.monitor.violations == 0


async def test_react_action_that_ends_the_episode_ends_the_run() -> None:
    result, sink, model, _ = await run_spec("react", [
        "[Thought] I know it.\n[Action] answer\n[Action Input] 31\n",
    ])
    assert len(model.requests) == 1
    assert summary(sink.steps[1])[-1] == ("action", "Obs", "answer 31", "Correct answer.")
    assert sink.nodes[1].termination == "reward" and result.reward == 1.0


async def test_rewoo_runs_the_plan_with_labels_then_the_solver() -> None:
    result, sink, model, _ = await run_spec("rewoo", [
        "[Plan] Count the apples in the bags.\n[Action Label] #E1\n[Action] calculator\n"
        "[Action Input] 3 * 12\n[Plan] Take away the eaten apples.\n[Action Label] #E2\n"
        "[Action] calculator\n[Action Input] #E1 - 5\n",
        "31",
    ])
    planner_call, solver_call = model.requests
    assert planner_call.stop == ["[Question]", "[Answer]"] and solver_call.role == "solver"
    assert solver_call.prompt is not None
    assert solver_call.prompt.endswith(
        f"Task: {QUESTION}\nPlan: Count the apples in the bags.\n#E1 = calculator 3 * 12: 36\n"
        "Plan: Take away the eaten apples.\n#E2 = calculator 36 - 5: 31\n\nAnswer:")
    assert summary(sink.steps[1]) == [
        ("thought", "Plan", "Count the apples in the bags.", ""),
        ("thought", "Plan", "Take away the eaten apples.", ""),
        ("action", "Solver", "calculator 3 * 12", "36"),
        ("action", "Solver", "calculator 36 - 5", "31"),
        ("action", "Solver", "answer 31", "Correct answer."),
    ]
    assert sink.steps[1][3].extra == {"state": "Solver", "action": "calculator",
                                      "input": "#E1 - 5", "label": "#E2"}
    assert result.status == "succeeded" and sink.nodes[1].termination == "reward"


async def test_reflexion_evaluates_reflects_and_retries() -> None:
    result, sink, model, _ = await run_spec("reflexion", [
        "[Thought] Apples in the bags.\n[Action] calculator\n[Action Input] 3 * 12\n",
        "[Final Thought] He has 36 apples.\n[Proposed Answer] 36\n",
        "[Reflection] I forgot the 5 eaten apples.\n[Thought] Subtract them.\n"
        "[Action] calculator\n[Action Input] 36 - 5\n",
        "[Final Thought] 31 are left.\n[Proposed Answer] 31\n",
    ])
    assert model.requests[0].stop == ["[Question]", "[Observation]", "[Evaluation]"]
    assert model.prompts[2].endswith("[Proposed Answer] 36\n[Evaluation] Incorrect answer.\n")
    assert summary(sink.steps[1]) == [
        ("thought", "Tht", "Apples in the bags.", ""),
        ("action", "Obs", "calculator 3 * 12", "36"),
        ("thought", "Final-Tht", "He has 36 apples.", ""),
        ("thought", "Prop-Ans", "36", ""),
        ("action", "Eval", "answer 36", "Incorrect answer."),
        ("thought", "Ref", "I forgot the 5 eaten apples.", ""),
        ("thought", "Tht", "Subtract them.", ""),
        ("action", "Obs", "calculator 36 - 5", "31"),
        ("thought", "Final-Tht", "31 are left.", ""),
        ("thought", "Prop-Ans", "31", ""),
        ("action", "Eval", "answer 31", "Correct answer."),
    ]
    assert result.status == "succeeded" and sink.nodes[1].termination == "reward"


async def test_cot() -> None:
    result, sink, model, _ = await run_spec("cot", [
        "[Thought] 3 * 12 = 36 apples, minus 5 eaten is 31.\n[Answer] 31\n"])
    assert model.requests[0].stop == ["[Question]"]  # no environment-supplied state
    assert "[Thought] 5 packs of 6 eggs are 30 eggs" in model.prompts[0]  # the cot example
    assert summary(sink.steps[1]) == [
        ("thought", "Tht", "3 * 12 = 36 apples, minus 5 eaten is 31.", ""),
        ("action", "Ans", "answer 31", "Correct answer."),
    ]
    assert result.status == "succeeded"


async def test_direct_wrong_answer_fails() -> None:
    result, sink, _, _ = await run_spec("direct", ["[Answer] 30"])
    assert summary(sink.steps[1]) == [("action", "Ans", "answer 30", "Incorrect answer.")]
    node = sink.nodes[1]
    assert (node.termination, node.success, node.self_assessed) == ("incorrect", False, None)
    assert result.status == "failed" and result.reward == 0.0


async def test_direct_right_answer() -> None:
    result, _, _, _ = await run_spec("direct", ["[Answer] 31 apples"])
    assert result.status == "succeeded" and result.reward == 1.0


# -- environments without an answer action: self-assessment ------------------------------------
@pytest.mark.parametrize(("answer", "termination", "success", "assessed"), [
    ("I did a. Task completed!", "completed", True, True),
    ("Task failed!", "failed", False, False),
    ("a", "answered", False, None),
])
async def test_without_an_answer_action_the_answer_is_a_self_assessment(
        answer: str, termination: str, success: bool, assessed: bool | None) -> None:
    _, sink, model, env = await run_spec("react", [
        "[Thought] Do a.\n[Action] ok\n[Action Input] a\n",
        f"[Final Thought] Done.\n[Answer] {answer}",
    ], env=ToyEnv())
    assert env.actions == ["ok a"]
    assert "end with 'Task completed!'" in model.prompts[0]
    assert summary(sink.steps[1])[-1] == ("thought", "Ans", answer, "")
    node = sink.nodes[1]
    assert (node.termination, node.success, node.self_assessed) == (termination, success,
                                                                   assessed)


# -- the monitor inside a spec agent ---------------------------------------------------------
async def test_a_skipped_state_is_corrected_and_generation_resumes() -> None:
    result, sink, model, _ = await run_spec("react", [
        "[Thought] Compute it.\n[Action Input] 3 * 12 - 5\n",  # skips [Action]
        " calculator\n[Action Input] 3 * 12 - 5\n",
        "[Final Thought] 31.\n[Answer] 31",
    ])
    assert model.prompts[1] == model.prompts[0] + "[Thought] Compute it.\n[Action]"
    first_call = sink.calls[0]
    assert first_call.monitor is not None
    assert first_call.monitor["kind"] == "invalid_transition"
    assert first_call.monitor["corrected"] is True and first_call.monitor["prefix"] == "[Action]"
    assert summary(sink.steps[1])[:2] == [("thought", "Tht", "Compute it.", ""),
                                          ("action", "Obs", "calculator 3 * 12 - 5", "31")]
    assert result.monitor.corrections == 1 and result.status == "succeeded"


async def test_without_the_monitor_an_invalid_output_is_recorded_and_the_agent_goes_on() -> None:
    result, sink, model, _ = await run_spec("react", [
        "[Thought] Compute it.\n[Action Input] 3 * 12 - 5\n",  # skips [Action]
        "[Action] calculator\n[Action Input] 3 * 12 - 5\n",
        "[Final Thought] 31.\n[Answer] 31",
    ], monitor={"enabled": False})
    assert model.prompts[1] == model.prompts[0] + "[Thought] Compute it.\n"  # the valid part
    invalid = sink.steps[1][1]
    assert invalid.error == "Act-Inp after Tht; expected Act" and invalid.kind == "thought"
    assert all(c.monitor is None for c in sink.calls)
    assert result.monitor.validations == 0 and result.status == "succeeded"


async def test_text_after_the_answer_is_dropped() -> None:
    result, sink, model, _ = await run_spec("direct", ["[Answer] 31\n[Question] What next?"],
                                            monitor={"enabled": False})
    assert len(model.requests) == 1
    assert summary(sink.steps[1]) == [("action", "Ans", "answer 31", "Correct answer.")]
    assert result.status == "succeeded"


# -- budgets ------------------------------------------------------------------------------------
async def test_max_steps_counts_llm_calls() -> None:
    loop = "[Thought] Again.\n[Action] calculator\n[Action Input] 1 + 1\n"
    result, sink, model, _ = await run_spec("react", [loop] * 3, max_steps=3)
    assert len(model.requests) == 3
    assert sink.nodes[1].termination == "max_steps" and result.status == "failed"


async def test_patience_counts_failed_observations() -> None:
    loop = "[Thought] Try.\n[Action] calculator\n[Action Input] x\n"
    _, sink, model, _ = await run_spec("react", [loop] * 5, patience=2, max_steps=10)
    assert len(model.requests) == 2
    assert sink.nodes[1].termination == "patience"
    assert [s.observation for s in sink.steps[1] if s.kind == "action"] == [
        "Error: unknown name 'x': use numbers only."] * 2


# -- text from outside cannot fake a state --------------------------------------------------
def test_task_text_that_looks_like_a_state_is_defused() -> None:
    monitor = Monitor(Spec.builtin("react"))
    text = neutralize(monitor, "Say [Answer] 3 or [Made Up] but keep [oak planks].")
    assert text == "Say (Answer) 3 or (Made Up) but keep [oak planks]."


# -- a custom spec: an environment-supplied state without a rule of its own ------------------
CUSTOM = """
name: tool-user
states:
  Task: {text: "Task:"}
  Tool: {text: "Tool:"}
  Act: {text: "Call:"}
  Act-Inp: {text: "With:"}
  Result: {text: "Result:", env_input: true}
  Ans: {text: "Final:"}
behavior: (next Task (until (next Tool Act Act-Inp Result) Ans))
"""


async def test_a_custom_spec_runs_its_actions_at_any_env_input_state() -> None:
    result, sink, model, _ = await run_spec(CUSTOM, [
        "Tool: the calculator\nCall: calculator\nWith: 36 - 5\n",
        "Final: 31",
    ])
    assert model.prompts[1].endswith("With: 36 - 5\nResult: 31\n")
    assert summary(sink.steps[1]) == [
        ("thought", "Tool", "the calculator", ""),
        ("action", "Result", "calculator 36 - 5", "31"),
        ("action", "Ans", "answer 31", "Correct answer."),
    ]
    assert result.status == "succeeded"


# -- through the strategies ------------------------------------------------------------------
async def test_under_adapt_a_failed_spec_agent_is_decomposed() -> None:
    planner = ScriptedModel([
        "Step 1: compute the apples in 3 bags of 12\n"
        "Step 2: take away the 5 eaten apples and submit the answer\n"
        "Execution Order: (Step 1 AND Step 2)"])
    result, sink, model, _ = await run_spec("react", [
        # the root: a wrong answer
        "[Thought] A guess.\n[Action] calculator\n[Action Input] 3 * 10\n",
        "[Final Thought] About 30.\n[Answer] 30",
        # step 1: a sub-task; its answer is a self-assessment
        "[Thought] Bags times apples.\n[Action] calculator\n[Action Input] 3 * 12\n",
        "[Final Thought] 36 apples.\n[Answer] 36. Task completed!",
        # step 2: uses the propagated calculations and submits the answer
        "[Thought] 36 minus 5.\n[Action] answer\n[Action Input] 31\n",
    ], strategy="adapt", d_max=2, planner=planner)
    assert len(model.requests) == 5 and len(planner.requests) == 1
    root, step1, step2 = sink.nodes[1], sink.nodes[2], sink.nodes[3]
    assert root.termination == "incorrect" and root.success is True
    assert (step1.termination, step1.self_assessed, step1.success) == ("completed", True, True)
    assert step2.termination == "reward" and step2.success is True
    sub_prompt = model.prompts[2]
    assert sub_prompt.endswith("[Question] compute the apples in 3 bags of 12\n")
    assert "end with 'Task completed!'" in sub_prompt  # a sub-task is not checked
    assert "[Question] take away the 5 eaten apples and submit the answer\n" \
           "Calculations so far: 3 * 10 = 30; 3 * 12 = 36\n" in model.prompts[4]
    assert result.status == "succeeded" and result.reward == 1.0 and result.max_depth == 2
