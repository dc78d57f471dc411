"""The change list computed from the copy-on-write layer equals real ``git status --short``
over the whole file system (InterCode's way), on random changes."""

from __future__ import annotations

import random
import shlex
import shutil
from pathlib import Path

import pytest

from adapt.envs.intercode_bash.changes import build_manifest, status, status_text
from adapt.envs.intercode_bash.layers import Layers
from adapt.envs.intercode_bash.sandbox import Sandbox

FILES = ["testbed/a.txt", "testbed/b", "testbed/d1/c.txt", "testbed/d1/d2/e.sh",
         "testbed/d1/d2/f", "testbed/x y.txt", "testbed/bin/tool", "other/g.md", "top.html"]
NEW = ["testbed/new.txt", "testbed/d1/new", "testbed/nd/n1.txt", "testbed/nd/sub/n2",
       "testbed/nd2/bin/ignored", "tmp/t.txt", "newtop/z", "testbed/d1/d2/h i.txt",
       "testbed/d1/usr", "mnt/m", "testbed/é.txt", 'testbed/q"uote']
DIRS = ["testbed/d1", "testbed/d1/d2", "other", "testbed"]


@pytest.fixture(scope="module")
def git_stack(bash_layers: dict[int, Layers], tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[Path, ...]:
    """A file system committed to git at / (InterCode's image, in small)."""
    skeleton = bash_layers[4].skeleton
    script = ["cd /"]
    for f in FILES:
        script.append(f"mkdir -p {shlex.quote(str(Path('/' + f).parent))} && "
                      f"echo {shlex.quote(f)} > {shlex.quote('/' + f)}")
    script += ["chmod +x /testbed/d1/d2/e.sh", "ln -s a.txt /testbed/link",
               "git init -q / && git -C / add -A && "
               "git -C / -c user.email=t@t -c user.name=t commit -qm init"]
    box = Sandbox([skeleton], timeout=30)
    try:
        result = box.run("\n".join(script), cwd="/")
        assert result.exit_code == 0, result.text
        layer = tmp_path_factory.mktemp("gitfs") / "layer"
        shutil.copytree(box.upper, layer, symlinks=True)
    finally:
        box.close()
    return (layer, skeleton)


def _random_ops(rng: random.Random) -> str:
    ops = []
    for _ in range(rng.randint(1, 7)):
        f = shlex.quote("/" + rng.choice([*FILES, "testbed/link"]))
        n = shlex.quote("/" + rng.choice(NEW))
        d = shlex.quote("/" + rng.choice(DIRS))
        ops.append(rng.choice([
            f"echo changed >> {f}", f"echo {rng.choice(FILES)} > {f}", f"touch {f}",
            f"chmod +x {f}", f"chmod -x {f}", f"chmod 600 {f}", f"rm -f {f}", f"rm -rf {d}",
            f"mkdir -p $(dirname {n}) && echo new > {n}", f"mkdir -p {n}",
            f"mv {f} {n} 2>/dev/null", f"mv {d} /testbed/moved 2>/dev/null",
            f"cp -r {d} /testbed/copy 2>/dev/null", f"ln -sf /etc/hosts {f}",
            f"rm -f {f} && mkdir -p {f} && echo x > {f}/inner", "mkfifo /testbed/fifo",
            f"rm -rf {d} && mkdir -p {d} && echo back > {d}/back.txt",
            f"echo same > {n} && cp {n} {f}",
        ]))
    return "; ".join(ops)


def test_status_equals_git_status(git_stack: tuple[Path, ...]) -> None:
    manifest = build_manifest(list(git_stack))
    assert "testbed/link" in manifest.entries and ".gitignore" in manifest.entries
    assert not any(p.startswith(".git/") for p in manifest.entries)
    rng = random.Random(5)
    for trial in range(40):
        box = Sandbox(git_stack, timeout=20)
        try:
            ops = _random_ops(rng)
            box.run(ops + " 2>/dev/null; true", cwd="/")
            ours = status_text(status(manifest, box.upper, git_stack))
            git = box.run("git -c core.quotepath=true status --short 2>&1", cwd="/").text
            assert sorted(ours.splitlines()) == sorted(git.splitlines()), \
                f"trial {trial}: {ops}\nours:\n{ours}git:\n{git}"
        finally:
            box.close()
