"""The image and CI install what InterCode-Bash needs: bubblewrap and the packages of
InterCode's image, the list ``layers.IMAGE_PACKAGES`` checks for."""

from __future__ import annotations

import re
from pathlib import Path

from adapt.envs.intercode_bash.layers import IMAGE_PACKAGES
from adapt.envs.intercode_bash.sandbox import SANDBOX_PACKAGES

ROOT = Path(__file__).resolve().parents[3]


def installed_by_dockerfile() -> set[str]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    found: set[str] = set()
    for line in text.splitlines():
        if line.startswith("RUN") and "apt-get install" in line:
            after = line.split("apt-get install", 1)[1]
            command = re.split(r"&&|;", after)[0]
            found |= {w for w in command.split() if not w.startswith("-")}
    return found


def test_the_image_installs_the_sandbox_and_the_image_packages() -> None:
    packages = installed_by_dockerfile()
    missing = (set(IMAGE_PACKAGES) | set(SANDBOX_PACKAGES)) - packages
    assert not missing, missing


def test_ci_installs_the_same_packages() -> None:
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    listed = re.search(r'bash_packages="([^"]*)"', text)
    assert listed is not None
    assert set(listed.group(1).split()) == set(IMAGE_PACKAGES) | {"bubblewrap"}
    assert "bubblewrap" in installed_by_dockerfile()
