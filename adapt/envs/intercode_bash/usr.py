"""The ``/usr`` of the sandbox: the files of InterCode's image packages, linked from the host.

InterCode's image is ``ubuntu`` plus a short list of packages. Overlaying the host's whole
``/usr`` would give the agent every tool the host has (and make ``find /`` walk all of it), so
the prepare step builds a ``/usr`` layer of just these packages: the essential and required
packages of the distribution (what a base image holds), the image's packages, and everything
they depend on (``Depends`` and ``Pre-Depends``, alternatives and virtual packages resolved
to what is installed). Each file is hard-linked from the host when the cache is on the same
file system (no space used), else copied; set-id programs are copied without their set-id bits. The packages must be installed on the host
(``apt-get install``, named by ``layers.prepare`` when missing).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path

from adapt.envs.intercode_bash.atomic import building
from adapt.envs.processes import minimal_environment

_DPKG_INFO = Path("/var/lib/dpkg/info")
_FIELDS = "${Package}\t${Status}\t${Essential}\t${Priority}\t${Pre-Depends}\t${Depends}\t" \
    "${Provides}\n"


def _installed() -> dict[str, tuple[bool, list[list[str]], list[str]]]:
    """Installed packages: name -> (base package?, dependency groups, provided names)."""
    dpkg_query = shutil.which("dpkg-query") or "dpkg-query"
    out = subprocess.run([dpkg_query, "-W", "-f", _FIELDS], capture_output=True, text=True,
                         check=True, env=minimal_environment()).stdout
    packages: dict[str, tuple[bool, list[list[str]], list[str]]] = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) != 7 or "install ok installed" not in parts[1]:
            continue
        name, _, essential, priority, pre, deps, provides = parts
        groups = [[re.split(r"[\s(:]", alt.strip())[0] for alt in group.split("|")]
                  for group in f"{pre},{deps}".split(",") if group.strip()]
        base = essential == "yes" or priority == "required"
        packages[name] = (base, groups, [re.split(r"[\s(]", p.strip())[0]
                                         for p in provides.split(",") if p.strip()])
    return packages


def closure(roots: Iterable[str]) -> list[str]:
    """``roots``, the base packages and everything they depend on, as installed."""
    packages = _installed()
    providers: dict[str, list[str]] = {}
    for name, (_, _, provides) in packages.items():
        for virtual in provides:
            providers.setdefault(virtual, []).append(name)
    todo = [n for n, (base, _, _) in packages.items() if base] + [r for r in roots
                                                                  if r in packages]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for group in packages[name][1]:
            for alt in group:
                chosen = alt if alt in packages else next(iter(providers.get(alt, [])), None)
                if chosen is not None:
                    todo.append(chosen)
                    break
    return sorted(seen)


def package_files(package: str) -> list[str]:
    """The paths a package installed (``dpkg -L``, read from dpkg's database)."""
    for candidate in (_DPKG_INFO / f"{package}.list",
                      *sorted(_DPKG_INFO.glob(f"{package}:*.list"))):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    return []


def build_usr(target: Path, roots: Iterable[str]) -> int:
    """Fill ``target`` (the future ``/usr``) with the files of ``closure(roots)`` under the
    host's ``/usr``; returns the number of files."""
    with building(target) as tmp:
        return _fill_usr(tmp, roots)


def _fill_usr(tmp: Path, roots: Iterable[str]) -> int:
    tmp.mkdir()
    count = 0
    usr = Path("/usr")
    for package in closure(roots):
        for listed in package_files(package):
            if not listed.startswith("/"):
                continue
            real = Path(os.path.realpath(os.path.dirname(listed))) / os.path.basename(listed)
            try:
                rel = real.relative_to(usr)
            except ValueError:
                continue  # /etc, /var, ...: the skeleton has its own
            if str(rel) == ".":
                continue
            dst = tmp / rel
            try:
                st = os.lstat(real)
            except OSError:
                continue  # a listed file the host has removed (or diverted)
            if os.path.isdir(real) and not os.path.islink(real):
                dst.mkdir(parents=True, exist_ok=True)
                continue
            if dst.exists() or dst.is_symlink():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            if os.path.islink(real):
                dst.symlink_to(os.readlink(real))
            elif st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                shutil.copy2(real, dst)  # never a second link to a set-id program
                os.chmod(dst, stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
            else:
                try:
                    os.link(real, dst)
                except OSError:
                    shutil.copy2(real, dst)
            count += 1
    _copy_alternatives(tmp)
    return count


def _copy_alternatives(tmp: Path) -> None:
    """Links under /usr that point into /etc/alternatives (awk, editor, ...) are created by
    maintainer scripts, not listed by dpkg: take those whose target exists in the layer."""
    for folder in ("bin", "sbin", "share/man/man1"):
        host = Path("/usr") / folder
        if not host.is_dir():
            continue
        for entry in host.iterdir():
            if not entry.is_symlink():
                continue
            link = os.readlink(entry)
            if not link.startswith("/etc/alternatives/"):
                continue
            final = os.path.realpath(entry)
            if not final.startswith("/usr/"):
                continue
            if not (tmp / Path(final).relative_to("/usr")).exists():
                continue
            dst = tmp / folder / entry.name
            if not dst.exists() and not dst.is_symlink():
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.symlink_to(link)
