"""What the README and the docs must not let drift: the two set-up commands (CI runs the second
verbatim), the five requests (against the real API), the library example, the CLI verbs the
pages name, the links between the pages, and the README's length."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer.main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# the written pages (docs/results/smollm2/ holds generated bench reports)
DOCS = sorted([*(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "results").glob("*.md")])
#: commands a page documents as not landed yet, with the page that says so; once one exists,
#: this entry must go (the test below fails) and the page must drop its "not on main" note
PENDING_VERBS: dict[tuple[str, ...], str] = {}
MAX_README_LINES = 120


def readme_commands() -> list[str]:
    text = README.read_text()
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    start = lines.index("```bash")
    assert all(not ln.strip() for ln in lines[1:start]), "README must open with the commands"
    end = lines.index("```", start + 1)
    return lines[start + 1 : end]


def code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"(?ms)^```{lang}\n(.*?)^```", text)


def section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def shell_commands(block: str) -> list[str]:
    """The commands of a bash block: comments dropped, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def five_requests() -> list[str]:
    (block,) = code_blocks(section(README.read_text(), "The service in five requests"), "bash")
    return shell_commands(block)


def test_readme_opens_with_exactly_two_commands() -> None:
    commands = readme_commands()
    assert len(commands) == 2
    assert "adapt serve" in commands[0] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    assert readme_commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_the_readme_stays_short() -> None:
    n = len(README.read_text().splitlines())
    assert n <= MAX_README_LINES, f"README has {n} lines: move the detail into docs/"


def test_the_readme_links_the_generated_configuration_page() -> None:
    # every setting is documented there; tests/test_docs_config.py keeps the page current
    assert "(docs/configuration.md)" in README.read_text()


def curl_request(command: str) -> tuple[str, str]:
    """(method, path) of a curl command line, with ``$ID`` as ``{task_id}``."""
    words = shlex.split(command.split("|")[0].replace("$(", " "))
    words = words[words.index("curl") + 1 :]
    method = "GET"
    if "-X" in words:
        method = words[words.index("-X") + 1]
    url = next(w for w in words if w.startswith("localhost:8000"))
    path = url.removeprefix("localhost:8000").split("?")[0]
    return method, path.replace("$ID", "{task_id}")


def test_the_five_requests_are_endpoints_of_the_api() -> None:
    from api.main import create_app

    paths = create_app().openapi()["paths"]
    requests = [curl_request(c) for c in five_requests() if "curl" in c]
    assert len(requests) == 5, requests
    for method, path in requests:
        assert path in paths and method.lower() in paths[path], f"{method} {path} is no endpoint"
    assert [m for m, _ in requests] == ["POST", "GET", "GET", "GET", "POST"]


def test_every_curl_in_the_docs_names_an_endpoint() -> None:
    from api.main import create_app

    paths = create_app().openapi()["paths"]
    templates = [re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", p) + "$") for p in paths]
    for page in [README, *DOCS]:
        for block in code_blocks(page.read_text(), "bash"):
            for command in shell_commands(block):
                if "curl" not in command or "localhost:8000" not in command:
                    continue
                _, path = curl_request(command)
                path = path.replace("{task_id}", "x").replace("$ID", "x")
                assert any(t.match(path) for t in templates), f"{page.name}: {command}"


def _cli() -> Any:
    from adapt.cli import app

    group = typer.main.get_command(app)
    assert hasattr(group, "commands")
    return group


def documented_verbs(text: str) -> set[tuple[str, ...]]:
    """``adapt VERB [SUBVERB]`` as written in the page's code (blocks and inline)."""
    found: set[tuple[str, ...]] = set()
    for match in re.finditer(r"(?:^|[`$\s(/])adapt ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)", text,
                             re.M):
        found.add(tuple(match.group(1).split()))
    return found


def test_every_documented_cli_verb_exists() -> None:
    cli = _cli()
    for page in [README, *DOCS]:
        for words in documented_verbs(page.read_text()):
            command = cli.commands.get(words[0])
            if command is None:
                continue  # prose such as "adapt is ..." or "adapt itself"
            if hasattr(command, "commands") and len(words) > 1 and words not in PENDING_VERBS:
                assert words[1] in command.commands, (
                    f"{page.relative_to(ROOT)}: `adapt {' '.join(words)}` is no command")
    for words, page_name in PENDING_VERBS.items():
        group = cli.commands[words[0]]
        assert words[1] not in group.commands, f"`adapt {' '.join(words)}` landed: update " \
            f"{page_name} and drop it from PENDING_VERBS"
        assert "Not on main yet" in (ROOT / page_name).read_text()
    readme_verbs = {w[0] for w in documented_verbs(README.read_text())}
    assert {"serve", "keys", "run", "envs"} <= readme_verbs


def github_anchor(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
    return {github_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{page.relative_to(ROOT)}: broken link {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{page.relative_to(ROOT)}: no #{anchor}"


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    linked: set[Path] = set()
    pending = [README]
    while pending:
        page = pending.pop()
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text):
            path = (page.parent / target).resolve()
            if path.is_dir():
                path = path / "README.md"
            if path.suffix == ".md" and path.exists() and path not in linked:
                linked.add(path)
                pending.append(path)
    missing = [str(p.relative_to(ROOT)) for p in DOCS if p.resolve() not in linked]
    assert not missing, f"docs pages no page links to: {missing}"


def test_the_library_example_runs() -> None:
    (example,) = code_blocks(section(README.read_text(), "As a library"), "python")
    namespace: dict[str, object] = {}
    exec(compile(example, "README.md", "exec"), namespace)
    result = namespace["result"]
    assert getattr(result, "status", None) == "succeeded"
    assert isinstance(namespace["tree"], dict) and namespace["tree"]["depth"] == 1


def test_the_architecture_page_names_every_folder_and_engine_module() -> None:
    """docs/architecture.md and the folder layout tell the same story."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    packages = [p.name for p in (ROOT / "adapt").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()]
    for name in [*packages, "api", "workers", "migrations", "benchmarks"]:
        folder = f"adapt/{name}/" if name in packages else f"{name}/"
        assert folder in text, f"docs/architecture.md does not name {folder}"
    for name in [p.name for p in (ROOT / "adapt" / "envs").iterdir()
                 if (p / "__init__.py").exists()]:
        assert f"{name}/" in text, f"docs/architecture.md does not name adapt/envs/{name}/"
    (engine,) = [b for b in code_blocks(text, "") if b.startswith("adapt/engine/")]
    for path in (ROOT / "adapt" / "engine").iterdir():
        if path.name.startswith("__") or not (path.suffix == ".py" or path.is_dir()):
            continue
        shown = path.name + ("/" if path.is_dir() else "")
        assert f"  {shown}" in engine, f"docs/architecture.md's engine tree lacks {shown}"


def test_the_service_page_lists_every_status_and_event_type() -> None:
    from adapt.engine.events import EVENT_TYPES
    from adapt.engine.tree import TASK_STATUSES

    text = (ROOT / "docs" / "service.md").read_text()
    for name in [*TASK_STATUSES, *EVENT_TYPES]:
        assert f"`{name}`" in text, f"docs/service.md does not mention `{name}`"


def test_the_service_page_lists_every_endpoint() -> None:
    from api.main import create_app

    text = (ROOT / "docs" / "service.md").read_text()
    for path, operations in create_app().openapi()["paths"].items():
        shown = path.replace("{task_id}", "{id}")
        for method in operations:
            assert f"`{method.upper()} {shown}`" in text, (
                f"docs/service.md's endpoint table lacks `{method.upper()} {shown}`")
