"""Our own scripted solutions of the 6 runnable MCPMark Filesystem tasks (written for these
tests from what each task's ``verify.py`` checks, not taken from MCPMark), and a wrong one of
each: the tool calls a model would make, as text actions, given the workspace path.

``replies(task_id, wrong)`` gives a function for :class:`adapt.llm.testing.FunctionModel`: it
reads the workspace folder from the first call's result (``list_allowed_directories``) in the
prompt and answers the next action of the script.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from adapt.envs.mcp.grammar import action
from adapt.llm.base import ChatRequest

EXPENSES = [
    ("Archives/tax_documents_2022.csv", "42000.00"), ("Archives/tax_documents_2022.csv", "1800.00"),
    ("Archives/tax_documents_2022.csv", "950.00"),
    ("Documents/Personal/tax_info_2023.csv", "45000.00"),
    ("Documents/Personal/tax_info_2023.csv", "2500.00"),
    ("Documents/Personal/tax_info_2023.csv", "1200.00"),
    ("Documents/budget.csv", "250.00"), ("Documents/budget.csv", "180.00"),
    ("Documents/budget.csv", "120.00"), ("Downloads/expenses.csv", "45.99"),
    ("Downloads/expenses.csv", "99.00"), ("Downloads/expenses.csv", "234.50"),
    ("Downloads/price_comparisons.csv", "879.99"), ("Downloads/price_comparisons.csv", "289.99"),
    ("Downloads/price_comparisons.csv", "74.99"),
]
CONTACTS = """Name,Email,Phone,Status,Industry
John Smith,john@email.com,555-0101,,
Jane Doe,jane@email.com,555-0102,,
Bob Johnson,bob@email.com,555-0103,,
Alice Brown,alice@email.com,555-0201,Inactive,
Charlie Davis,charlie@email.com,555-0202,Active,
David Wilson,david@email.com,555-0203,Inactive,
Acme Corp,acme@corp.com,,,Technology
Global Inc,global@inc.com,,,Finance
Local Business,local@biz.com,,,Retail
Spouse,,+1-555-0124,,
Parent,,+1-555-0125,,
Sibling,,+1-555-0126,,
Primary Doctor,,+1-555-0201,,
Dentist,,+1-555-0202,,
Pharmacy,,+1-555-0203,,
"""
#: file_arrangement: where each file goes (from the task's folder listing)
ARRANGEMENT = {
    "work": ["Documents/Work/client_list.csv", "Documents/Work/timesheet.csv",
             "experiment_results.txt", "Documents/Projects/budget_tracker.csv",
             "Downloads/expenses.csv"],
    "life": ["Desktop/contacts.csv", "Documents/budget.csv", "Downloads/fitness_log.csv",
             "Downloads/price_comparisons.csv", "book_list.txt", "bookmark_export.txt",
             "emergency_contacts.txt"],
    "archives": ["Archives/backup_contacts.csv", "Archives/tax_documents_2022.csv",
                 "correspondence_2023.txt", "Documents/Personal/tax_info_2023.csv"],
    "temp": ["Temp/test_data.csv", "draft_letter.txt"],
}
ZERO123 = "threestudio/models/guidance/zero123_guidance.py"
CLIP = "git+https://github.com/openai/CLIP.git"

DONE = "think: The task is done. Task completed!"
Script = Callable[[str, Path], list[str]]


def _budget(ws: str, template: Path, wrong: bool) -> list[str]:
    rows = EXPENSES[:-1] if wrong else EXPENSES
    total = sum(float(p) for _, p in rows)
    text = "".join(f"{f};{p}\n" for f, p in rows) + f"{total:.2f}\n"
    return [action("list_directory", {"path": f"{ws}/Documents"}),
            action("read_text_file", {"path": f"{ws}/Documents/budget.csv"}),
            action("write_file", {"path": f"{ws}/total_budget.txt", "content": text})]


def _contacts(ws: str, template: Path, wrong: bool) -> list[str]:
    answer = "teacher" if wrong else "dentist"
    return [action("read_text_file", {"path": f"{ws}/Desktop/contacts.csv"}),
            action("write_file", {"path": f"{ws}/contact_info.csv", "content": CONTACTS}),
            action("write_file", {"path": f"{ws}/answer.txt", "content": answer})]


def _arrange(ws: str, template: Path, wrong: bool) -> list[str]:
    out = [action("create_directory", {"path": f"{ws}/{d}"})
           for d in ("work", "life", "archives", "temp", "others")]
    for folder, files in ARRANGEMENT.items():
        if wrong and folder == "temp":
            folder = "others"
        for f in files:
            name = f.rsplit("/", 1)[-1]
            out.append(action("move_file", {"source": f"{ws}/{f}",
                                            "destination": f"{ws}/{folder}/{name}"}))
    return out


def _locate(ws: str, template: Path, wrong: bool) -> list[str]:
    answer = ZERO123.replace("zero123_guidance", "zero123") if wrong else ZERO123
    return [action("search_files", {"path": f"{ws}/threestudio/models/guidance",
                                    "pattern": "zero123"}),
            action("write_file", {"path": f"{ws}/answer.txt", "content": answer})]


def _analyse(ws: str, template: Path, wrong: bool) -> list[str]:
    where = "" if wrong else " at lines 323-328"
    answer = (f"guidance_out is a dict with the keys loss_sds, grad_norm, min_step and "
              f"max_step, built in {ZERO123}{where}.")
    return [action("read_text_file", {"path": f"{ws}/{ZERO123}", "head": 330}),
            action("write_file", {"path": f"{ws}/answer.txt", "content": answer})]


def _requirements(ws: str, template: Path, wrong: bool) -> list[str]:
    original = (template / "requirements.txt").read_text(encoding="utf-8")
    added = ["einops"] if wrong else ["einops", "kornia", "taming-transformers-rom1504", CLIP]
    content = original.rstrip("\n") + "\n" + "\n".join(added) + "\n"
    return [action("read_text_file", {"path": f"{ws}/requirements.txt"}),
            action("write_file", {"path": f"{ws}/requirements.txt", "content": content})]


SCRIPTS: dict[str, Callable[[str, Path, bool], list[str]]] = {
    "budget_computation": _budget, "contact_information": _contacts,
    "file_arrangement": _arrange, "code_locating": _locate, "output_analysis": _analyse,
    "requirements_completion": _requirements,
}
_ALLOWED = re.compile(r"Allowed directories:\n(\S+)")


def script(task_id: str, ws: str, template: Path, *, wrong: bool = False) -> list[str]:
    """Every action of the scripted run after ``list_allowed_directories``, and the claim."""
    return [*SCRIPTS[task_id](ws, template, wrong), DONE]


def replies(task_id: str, template: Path, *, wrong: bool = False,
            edit: Callable[[list[str], str], list[str]] | None = None
            ) -> Callable[[ChatRequest], str]:
    """The scripted model's answers for one task (see the module's docstring)."""
    def reply(request: ChatRequest) -> str:
        run = request.as_prompt().rsplit("\nTask: ", 1)[-1]  # after the prompt's examples
        found = _ALLOWED.findall(run)
        if not found:
            return action("list_allowed_directories", {})
        steps = script(task_id, found[-1], template, wrong=wrong)
        if edit is not None:
            steps = edit(steps, found[-1])
        done = run.rsplit("Allowed directories:", 1)[1].count("\n> ") - 1
        return steps[min(done, len(steps) - 1)]

    return reply


def _data() -> Path:
    from tests.support.mcp_servers import require_mcpmark

    return require_mcpmark()


def by_task(wrong: bool) -> Callable[[ChatRequest], str]:
    """One scripted model for all 6 tasks: the task in the prompt picks the script."""
    data = _data()
    from tests.support.mcpmark_service import runnable_tasks

    tasks = {t["task_id"]: t for t in runnable_tasks()}
    texts = {tid: (data / t["path"] / "description.md").read_text() for tid, t in tasks.items()}
    answer = {tid: replies(tid, data / t["initial_state"], wrong=wrong)
              for tid, t in tasks.items()}

    def reply(request: ChatRequest) -> str:
        prompt = request.as_prompt()
        for tid, text in texts.items():
            if text.strip() in prompt:
                return answer[tid](request)
        raise AssertionError("no MCPMark task in the prompt")

    return reply
