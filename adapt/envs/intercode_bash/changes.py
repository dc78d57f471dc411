"""What a command changed in the file system, as ``git status --short`` in InterCode's image.

InterCode commits the whole file system of its container to git (minus the folders its ignore
file lists) and takes ``git status --short`` after the agent's commands and after the gold
command. Here the copy-on-write layer already holds every write, so the same list is computed
from it instead of scanning the disk:

- the *manifest* of a file system is git's initial commit: every regular file and symlink whose
  path has no component named in the ignore file (``bin``, ``etc``, ``usr``, ... at any depth,
  and ``.git``), with its kind, executable bit and content hash;
- a tracked path that is gone (or no longer a file/symlink) is `` D``; one that turned from a
  file into a symlink or back is `` T``; one whose content, link target or executable bit
  differs is `` M`` (a ``touch`` or a ``chmod 600`` is no change,
  as for git);
- a new regular file or symlink outside the ignore list is untracked (``??``), shown as its
  topmost folder that holds no tracked path (``?? tmp/``, ``?? testbed/new/``), else as itself;
  empty folders, special files and what lies in a folder that replaced a tracked file are
  not shown;
- paths are quoted as git quotes them (C-style, and when they contain a space).

``parse_status`` then reads that text exactly as InterCode does (split on white space, pairs of
status and path), quirks included. A test runs real ``git status`` on random changes to check
the equivalence.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: names the ignore file lists (they match at any depth); ``.git`` is never shown by git
IGNORED_NAMES = frozenset({
    "bin", "boot", "dev", "etc", "home", "lib", "media", "opt", "proc", "root", "run", "sbin",
    "srv", "sys", "usr", "var", ".dockerenv", ".git",
})
_OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")


@dataclass(frozen=True, slots=True)
class Entry:
    """A tracked path's state: ``kind`` ``f`` (file) or ``l`` (symlink), the executable bit and
    the sha1 of the content (or of the link target)."""

    kind: str
    executable: bool
    digest: str


@dataclass(slots=True)
class Manifest:
    """The tracked paths of a file system (relative to /, ``/``-separated)."""

    entries: dict[str, Entry] = field(default_factory=dict)
    dirs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.dirs:
            self.dirs = frozenset(_ancestors(self.entries))

    def to_json(self) -> dict[str, Any]:
        return {p: [e.kind, e.executable, e.digest] for p, e in sorted(self.entries.items())}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        return cls({p: Entry(str(v[0]), bool(v[1]), str(v[2])) for p, v in data.items()})


def _ancestors(paths: Iterable[str]) -> set[str]:
    out = {""}
    for p in paths:
        parts = p.split("/")
        for i in range(1, len(parts)):
            out.add("/".join(parts[:i]))
    return out


def is_ignored(rel: str) -> bool:
    return any(part in IGNORED_NAMES for part in rel.split("/"))


def _is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _is_opaque(path: Path) -> bool:
    for name in _OPAQUE_XATTRS:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _entry(path: Path, st: os.stat_result) -> Entry | None:
    if stat.S_ISLNK(st.st_mode):
        return Entry("l", False, hashlib.sha1(os.fsencode(os.readlink(path))).hexdigest())
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha1()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return Entry("f", bool(st.st_mode & stat.S_IXUSR), h.hexdigest())
    return None


def lookup(layers: Sequence[Path], rel: str) -> Path | None:
    """Where ``rel`` lives in the overlay of ``layers`` (topmost first), or ``None`` when the
    merged view has nothing there (whiteouts, opaque folders and files over folders applied)."""
    parts = rel.split("/")
    for layer in layers:
        cur = layer
        for i, part in enumerate(parts):
            cur = cur / part
            try:
                st = os.lstat(cur)
            except (FileNotFoundError, NotADirectoryError):
                break  # not in this layer: look below, unless an opaque folder hides it
            if _is_whiteout(st):
                return None
            if i == len(parts) - 1:
                return cur
            if not stat.S_ISDIR(st.st_mode):
                return None
            if _is_opaque(cur):
                # the rest must be in this layer
                rest = cur.joinpath(*parts[i + 1:])
                try:
                    st_rest = os.lstat(rest)
                except (FileNotFoundError, NotADirectoryError):
                    return None
                return None if _is_whiteout(st_rest) else rest
        else:
            return None  # pragma: no cover - the loop returns on the last part
    return None


def _walk(layer: Path) -> Iterable[tuple[str, Path, os.stat_result]]:
    """Every path below ``layer`` (relative, ``/``-separated), folders before their content."""
    stack = [("", layer)]
    while stack:
        rel, path = stack.pop()
        try:
            names = sorted(os.listdir(path))
        except OSError:
            continue
        for name in names:
            child = path / name
            child_rel = f"{rel}/{name}" if rel else name
            try:
                st = os.lstat(child)
            except OSError:
                continue
            yield child_rel, child, st
            if stat.S_ISDIR(st.st_mode):
                stack.append((child_rel, child))


def build_manifest(layers: Sequence[Path]) -> Manifest:
    """The tracked paths of the overlay of ``layers`` (topmost first)."""
    candidates: set[str] = set()
    for layer in layers:
        for rel, _path, st in _walk(layer):
            if not stat.S_ISDIR(st.st_mode) and not is_ignored(rel):
                candidates.add(rel)
    entries: dict[str, Entry] = {}
    for rel in sorted(candidates):
        where = lookup(layers, rel)
        if where is None:
            continue
        entry = _entry(where, os.lstat(where))
        if entry is not None:
            entries[rel] = entry
    return Manifest(entries)


def status(manifest: Manifest, upper: Path, lowers: Sequence[Path]) -> list[tuple[str, str]]:
    """``(code, path)`` pairs as ``git status --short`` would list them, sorted by path:
    code `` M``, `` T``, `` D`` or ``??``; untracked folders end with ``/``."""
    layers = [upper, *lowers]
    tracked_candidates: set[str] = set()
    untracked: set[str] = set()
    prefixes: set[str] = set()
    for rel, path, st in _walk(upper):
        if stat.S_ISDIR(st.st_mode):
            if _is_opaque(path):
                prefixes.add(rel)
            continue
        if _is_whiteout(st) or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            prefixes.add(rel)
            if rel in manifest.entries:
                tracked_candidates.add(rel)
            elif not _is_whiteout(st) and not is_ignored(rel):
                untracked.add(rel)
    if prefixes:
        for tracked in manifest.entries:
            parts = tracked.split("/")
            if any("/".join(parts[:i]) in prefixes for i in range(1, len(parts) + 1)):
                tracked_candidates.add(tracked)
    out: list[tuple[str, str]] = []
    for rel in tracked_candidates:
        where = lookup(layers, rel)
        now = None if where is None else _entry(where, os.lstat(where))
        if now is None:
            out.append((" D", rel))
        elif now.kind != manifest.entries[rel].kind:
            out.append((" T", rel))  # a file became a symlink or back
        elif now != manifest.entries[rel]:
            out.append((" M", rel))
    shown: set[str] = set()
    for rel in untracked:
        parts = rel.split("/")
        if any("/".join(parts[:i]) in manifest.entries for i in range(1, len(parts))):
            continue  # below a folder that replaced a tracked file: git lists only the `` D``
        display = rel
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder not in manifest.dirs:
                display = folder + "/"
                break
        shown.add(display)
    out.extend(("??", p) for p in shown)
    out.sort(key=lambda item: item[1])
    return out


def quote_path(path: str) -> str:
    """A path as ``git status --short`` prints it (C-style quoting, also for spaces)."""
    raw = os.fsencode(path)
    specials = {0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f",
                0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}
    if not any(b < 0x20 or b >= 0x7F or b in (0x22, 0x5C, 0x20) for b in raw):
        return path
    out = []
    for b in raw:
        if b in specials:
            out.append(specials[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def status_text(entries: Iterable[tuple[str, str]]) -> str:
    """The ``git status --short`` output for ``entries``."""
    return "".join(f"{code} {quote_path(path)}\n" for code, path in entries)


def parse_status(text: str) -> list[tuple[str, str]]:
    """``(path, code)`` pairs read from status text as InterCode reads them: the text split on
    white space, then taken two tokens at a time (so a quoted path with a space shifts the
    pairs; a dangling last token, where InterCode would fail, is dropped)."""
    tokens = text.split()
    return [(tokens[i + 1], tokens[i]) for i in range(0, len(tokens) - 1, 2)]
