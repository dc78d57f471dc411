"""`adapt run --executor spec --spec ...`: a spec agent from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import adapt

RUN = ["run", "--env", "calculator", "--config", '{"index": 0}', "--strategy", "react",
       "--d-max", "1", "--model", 'script:["[Answer] 31"]', "--executor", "spec",
       "--max-steps", "3", "--json"]


def test_a_builtin_spec_runs() -> None:
    out = adapt(*RUN, "--spec", "pass")
    assert out.returncode in (0, 1), out.stderr
    payload = json.loads(out.stdout)
    calls = payload["tree"]["llm_calls"]
    assert calls and calls[0]["prompt"].rstrip().endswith(
        "[Question] Tom buys 3 bags of apples with 12 apples in each bag. He eats 5 apples. "
        "How many apples does he have left?")
    assert calls[0]["stop"] == ["[Question]", "[Summary]"]  # the PASS agent's environment-supplied state


def test_the_simulator_is_refused_for_an_environment_it_cannot_play() -> None:
    out = adapt(*[a if not a.startswith("script:") else "sim:textcraft" for a in RUN])
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "plays only textcraft, not 'calculator'" in " ".join(out.stderr.split())


def test_a_spec_file_runs(tmp_path: Path) -> None:
    spec = tmp_path / "direct.yaml"
    spec.write_text('name: mine\nstates:\n  Q: {text: "[Question]"}\n  A: {text: "[Answer]"}\n'
                    "behavior: (next Q A)\n", encoding="utf-8")
    out = adapt(*RUN, "--spec", str(spec))
    assert out.returncode in (0, 1), out.stderr
    prompt = json.loads(out.stdout)["tree"]["llm_calls"][0]["prompt"]
    assert "(next Q A)" in prompt


def test_an_unknown_spec_is_a_clear_error() -> None:
    out = adapt(*RUN, "--spec", "nosuch")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "no built-in specification 'nosuch'" in out.stderr
    missing = adapt(*RUN, "--spec", "missing.yaml")
    assert missing.returncode == 2 and "cannot read the spec file 'missing.yaml'" in missing.stderr
