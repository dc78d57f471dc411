"""The InterCode-Bash environment: actions, observations, submit and reward, config rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapt.envs import registry
from adapt.envs.intercode_bash import InterCodeBash, InterCodeBashConfig
from adapt.errors import InvalidConfig, UserError

TASK = {"fs": 1, "question": "How many lines do the .c files under /testbed have?",
        "gold": 'find /testbed -name "*.c" -print0 | xargs -0 cat | wc -l'}


def test_registered_under_its_name() -> None:
    assert registry.get("intercode_bash") is InterCodeBash


def test_config_rejects_host_paths_and_unknown_fields() -> None:
    for bad in ({**TASK, "fs": 5}, {**TASK, "fs": 0}, {**TASK, "root": "/etc"},
                {**TASK, "data_dir": "/work"}, {**TASK, "gold": []}, {**TASK, "question": ""},
                {**TASK, "observation": "/etc/passwd"}):
        with pytest.raises(ValueError):
            InterCodeBashConfig.model_validate(bad)
    assert set(InterCodeBashConfig.model_fields) == {"fs", "question", "gold", "observation",
                                                     "prompts"}
    assert InterCodeBashConfig.model_validate({**TASK, "gold": ["cd /", "ls"]}).gold_command \
        == "cd /;ls"


def test_reset_validates(bash_env: InterCodeBash) -> None:
    with pytest.raises(InvalidConfig, match="fs"):
        bash_env.reset(**{**TASK, "fs": 9})
    with pytest.raises(UserError, match="reset"):
        InterCodeBash().step("submit")


def test_missing_data_says_how_to_prepare(tmp_path: Path) -> None:
    env = InterCodeBash(cache_dir=tmp_path, timeout=5)
    env._data_dir = None
    env._resolve = lambda: None  # type: ignore[method-assign]
    with pytest.raises(UserError, match="prepare-bash"):
        env.reset(**TASK)


def test_episode(bash_env: InterCodeBash) -> None:
    assert bash_env.reset(**TASK) == f"Task: {TASK['question']}"
    assert bash_env.step("think: look first").observation == "OK."
    assert bash_env.step("ls /nope").observation.startswith("Invalid action")
    obs = bash_env.step("execute[ls /nope]").observation
    assert "No such file" in obs and obs.endswith("[exit status 2]")
    assert bash_env.is_failure(obs)
    obs = bash_env.step("execute[cd /testbed]").observation
    assert obs == "(no output)" and not bash_env.is_failure(obs)
    assert bash_env.cwd == "/testbed"
    obs = bash_env.step('execute[find . -name "*.c" | xargs cat | wc -l]').observation
    assert obs == "5"
    state = bash_env.salient_state()
    assert state is not None and "Working directory: /testbed." in state and "Last output: 5" in state
    result = bash_env.step("submit")
    assert result.done and result.reward == 1.0 and result.info["success"] is True
    assert bash_env.step("execute[ls]").observation.startswith("The task was already submitted")


def test_partial_rewards(bash_env: InterCodeBash) -> None:
    bash_env.reset(fs=2, question="Delete the .log files in /system/folder1.",
                   gold="find /system/folder1 -name '*.log' -print0 | xargs -0 rm")
    bash_env.step("execute[rm /system/folder1/log1.log /system/folder1/doc1.doc]")
    result = bash_env.step("submit")
    # one extra deletion (the .doc), same empty output
    assert result.info["diff_extra"] == [["system/folder1/doc1.doc", "D"]]
    assert result.info["reward_parts"] == {"file_diff": round(0.33 * (1 - 0.8427007929497149), 2),
                                          "file_changes": 0.33, "answer_similarity": 0.33}
    assert result.reward == pytest.approx(0.01 + 0.05 + 0.33 + 0.33)
    assert result.info["success"] is False


def test_new_files_contents_compared(bash_env: InterCodeBash) -> None:
    bash_env.reset(fs=1, question="Write hello into /testbed/hello.txt",
                   gold="echo hello > /testbed/hello.txt")
    bash_env.step("execute[echo goodbye > /testbed/hello.txt]")
    result = bash_env.step("submit")
    assert result.info["diff_same"] == {"files": [["testbed/hello.txt", "??"]], "correct": 0,
                                        "total": 1}
    assert result.info["reward_parts"]["file_changes"] == 0.0
    assert result.reward == pytest.approx(0.67)


def test_timeout_is_the_scored_output(bash_data: Path, bash_cache: Path, bash_layers: object
                                      ) -> None:
    env = InterCodeBash(data_dir=bash_data, cache_dir=bash_cache, timeout=1)
    try:
        env.reset(fs=4, question="wait", gold="echo Command timed out")
        obs = env.step("execute[sleep 30]").observation
        assert obs.startswith("Command timed out") and env.is_failure(obs)
        assert env.step("submit").reward == 1.0  # InterCode's observation on a timeout
    finally:
        env.close()


def test_submit_without_a_command(bash_env: InterCodeBash) -> None:
    bash_env.reset(**TASK)
    result = bash_env.step("submit")
    assert result.info["reward_parts"]["answer_similarity"] == 0.0
    assert result.reward == pytest.approx(0.67)


def test_intercode_observation_format(bash_env: InterCodeBash) -> None:
    bash_env.reset(**TASK, observation="intercode")
    obs = bash_env.step("execute[seq 1 200; ls /nope]").observation
    assert len(obs) == 350 and obs.startswith("1\n2\n3\n")  # raw, cut as InterCode's ReAct
    assert bash_env.is_failure(obs)  # the exit status still counts, though not shown
    assert bash_env.step("execute[cd /testbed]").observation == ""
    assert bash_env.final_action == "submit"
    assert InterCodeBash.paper_profile["environment_config"] == {"observation": "intercode",
                                                                 "prompts": "paper"}


async def test_turn_limit_submits(bash_env: InterCodeBash) -> None:
    from adapt.engine import MemorySink, RunConfig, run_task
    from adapt.llm.testing import ScriptedModel

    sink = MemorySink()
    model = ScriptedModel(['execute[find /testbed -name "*.c" | xargs cat | wc -l]',
                           "execute[pwd]"])
    config = RunConfig(strategy="react", d_max=1, executor={"max_steps": 2})
    result = await run_task(bash_env, {**TASK, "gold": "pwd"}, config, model, sink=sink)
    assert model.remaining == 0
    assert result.reward == 1.0  # the last output (/) was scored at the turn limit
