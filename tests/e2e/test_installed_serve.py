"""A release's artefacts: a wheel and an sdist built with ``python -m build``, the wheel
installed (not editable) into a fresh virtualenv, then `adapt serve`: the migrations are
package data, so the installed server migrates its database and answers requests, and it says
the version pyproject gives (``adapt --version``, ``GET /version``).

The artefacts are built from a copy of the checkout (building in the checkout would leave
build/ behind). The quick variant (run in CI) gives the fresh virtualenv this environment's
dependencies through a ``.pth`` file and installs only the wheel; the ``slow`` variant installs
the wheel with its dependencies, as a user does.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def pyproject_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def build_wheel(out: Path) -> Path:
    """Build the sdist and the wheel (``python -m build``, offline: this environment's
    setuptools); returns the wheel."""
    source = out / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__", "tests", "docs", "examples"))
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel",
                    "--outdir", str(out), str(source)], check=True, capture_output=True,
                   timeout=600)
    version = pyproject_version()
    (wheel,) = out.glob(f"adapt-{version}-*.whl")
    (sdist,) = out.glob(f"adapt-{version}.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "migrations/env.py", "adapt/version.py",
            "migrations/versions/0001_initial_schema.py"} <= names
    return wheel


def fresh_venv(path: Path, wheel: Path, *, shared_deps: bool) -> Path:
    """A new virtualenv with the wheel installed (not editable); its python."""
    if shared_deps:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True,
                       timeout=120)
        python = path / "bin" / "python"
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True).stdout.strip()
        # this environment's packages (its .pth files, e.g. the editable adapt, do not run)
        Path(purelib, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                        "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True,
                       timeout=300)
    else:
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
        python = path / "bin" / "python"
        subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True,
                       capture_output=True, timeout=1800)
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PACKAGES = ("adapt", "api", "workers", "migrations")


def tracked_data_files() -> set[str]:
    """Every git-tracked file under the packages that is not Python: what the code reads at run
    time (prompts, recipes, machines, built-ins, the UI, the migration template)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", *PACKAGES], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split("\0")
    return {name for name in listed if name and not name.endswith(".py")}


def benchmark_code(names: set[str]) -> list[str]:
    """The performance benchmarks' modules among a wheel's files: the ``benchmarks`` package, and
    any module of the checkout's ``benchmarks/`` by its file name elsewhere (the benchmarks stay
    in the repository; ``adapt bench``'s evaluation harness, ``adapt/eval``, ships)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", "benchmarks"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split("\0")
    modules = {Path(name).name for name in listed if name.endswith(".py")}
    modules -= {"__init__.py", "__main__.py"}
    # a package's own module may share a benchmark's file name (adapt/envs/processes.py)
    own = set(subprocess.run(["git", "ls-files", "-z", "--", *PACKAGES], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split("\0"))
    return sorted(n for n in names if n.startswith("benchmarks/") or "/bench/" in n
                  or "/bench_" in n
                  or (n.endswith(".py") and Path(n).name in modules and n not in own))


def check_installed_serve(tmp_path: Path, *, shared_deps: bool) -> None:
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"migrations/env.py", "migrations/script.py.mako",
            "migrations/versions/0001_initial_schema.py"} <= names
    data = tracked_data_files()
    assert "adapt/envs/textcraft/prompts/paper/planner.txt" in data  # the listing works
    assert not data - names, f"package data missing from the wheel: {sorted(data - names)}"
    assert not benchmark_code(names), f"benchmark code in the wheel: {benchmark_code(names)}"
    python = fresh_venv(tmp_path / "venv", wheel, shared_deps=shared_deps)
    work = tmp_path / "elsewhere"  # not the checkout: nothing may come from the source tree
    work.mkdir()
    where = subprocess.run([str(python), "-c", "import adapt, migrations; "
                            "print(adapt.__file__); print(migrations.__file__)"],
                           cwd=work, check=True, capture_output=True, text=True).stdout.split()
    assert all(p.startswith(str(tmp_path / "venv")) for p in where), where

    port = free_port()
    env = {**os.environ, "ADAPT_DATA_DIR": str(work / "data")}
    for name in ("ADAPT_DATABASE_URL", "ADAPT_BROKER_URL", "OPENAI_API_KEY", "PYTHONPATH",
                 "ADAPT_OPENAI_API_KEY", "ADAPT_DEFAULT_MODEL"):
        env.pop(name, None)
    log = work / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(python.parent / "adapt"), "serve", "--port", str(port)],
                                cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "not ready:\n" + log.read_text()
            time.sleep(0.2)
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        assert httpx.get(f"{url}/version", timeout=5).json()["version"] == pyproject_version()
        said = subprocess.run([str(python.parent / "adapt"), "--version"], cwd=work, env=env,
                              check=True, capture_output=True, text=True).stdout
        assert said.strip() == f"adapt {pyproject_version()}"
        created = httpx.post(f"{url}/tasks", json={
            "environment": "textcraft", "environment_config": {"seed": 5}, "d_max": 2},
            timeout=10)
        assert created.status_code == 202, created.text
        task_url = f"{url}/tasks/{created.json()['id']}"
        deadline = time.monotonic() + 60
        while not (task := httpx.get(task_url, timeout=5).json())["finished"]:
            assert time.monotonic() < deadline, task
            time.sleep(0.2)
        assert task["status"] in ("succeeded", "failed"), task
        assert task["usage"]["llm_calls"] > 0
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_installed_wheel_serves(tmp_path: Path) -> None:
    check_installed_serve(tmp_path, shared_deps=True)


@pytest.mark.slow
def test_pip_install_dot_into_a_fresh_venv_serves(tmp_path: Path) -> None:
    check_installed_serve(tmp_path, shared_deps=False)
