"""The design benches (InterCode-SQL, -Bash) record claims and verdicts as every bench does:
checked here on a design bench over the calculator (no SQL server or Bash data needed)."""

from __future__ import annotations

from adapt.engine import RunConfig
from adapt.envs.calculator import Calculator
from adapt.eval.designs import (
    DesignBench,
    DesignEntry,
    DesignReport,
    DesignTaskRecord,
    LevelStats,
    run_designs,
)
from adapt.eval.grid import BenchModel
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel


class Record(DesignTaskRecord):
    level: str


class Entry(DesignEntry):
    by_level: dict[str, LevelStats]


BENCH: DesignBench[int, Record, Entry] = DesignBench(
    title="calculator", designs={"react": ("react", "react")}, groups=("all problems",),
    group_heading="level", by_group_key="by_level", env_class=Calculator, record=Record,
    group_of=lambda r: r.level, entry_class=Entry,
    task_fields=lambda i: {"id": f"calculator/{i}", "level": "all problems"},
    task_config=lambda i: {"index": i}, error_note="(none)", default_designs=("react",),
    real_model_required="", title_of=lambda report: "calculator",
    default_env=lambda path: Calculator)


def liar() -> FunctionModel:
    """Answers 999 (wrong), then claims success."""
    def reply(request: ChatRequest) -> str:
        return "think: Task completed!" if "answer 999" in request.as_prompt() else "answer 999"

    return FunctionModel(reply, name="liar")


async def test_design_records_carry_claims_and_node_checks() -> None:
    model = liar()
    runs = {}
    for mode in ("off", "env"):
        runs[mode] = await run_designs(
            BENCH, [0, 1], models=[BenchModel(model, model)], designs="react",
            profiles="default", d_max=1, concurrency=1,
            base_config=RunConfig(verification=mode), price=None, env_factory=Calculator,
            on_result=None)
    (off,), (env,) = runs["off"].entries, runs["env"].entries
    assert off.success_rate == env.success_rate == 0.0
    assert off.self_assessed_success_rate == 1.0 and env.self_assessed_success_rate == 0.0
    assert off.by_level["all problems"].self_assessed_success_rate == 1.0
    assert [r.claimed_success for r in runs["off"].records] == [True, True]
    for record in runs["env"].records:
        (check,) = record.node_checks
        assert (check.claim, check.verdict, check.termination) == (True, "refuted", "refuted")
        assert "not correct" in (check.evidence or "")
        assert record.executor_calls_by_model == {"liar": 2}
    report = DesignReport(environment="calculator", data="-", concurrency=1, task_count=2,
                          **runs["env"].report_fields())
    assert "| self-assessed |" in BENCH.to_markdown(report)
