"""AgentGym's TextCraft server (the unmodified peer in ``../shared/peers/agentgym-textcraft``)
started on a loopback port for a test, as its README says: ``serve.sh PORT`` with this venv's
python first on PATH, a fixed hash seed and the recipe order of the published games."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path

import httpx
import pytest

from tests.support.envserver import free_port

SHARED = Path(
    os.environ.get("ADAPT_TEST_SHARED") or Path(__file__).resolve().parents[2].parent / "shared"
)
PEER = SHARED / "peers" / "agentgym-textcraft"
#: the peer's launch settings: the recipe files in reverse-sorted name order (the cycle
#: recipes of the published games) and a fixed hash seed (its listings come from sets)
PEER_ENV = {"TEXTCRAFT_RECIPE_ORDER": "reverse", "PYTHONHASHSEED": "0"}
#: what the peer imports besides the standard library
PEER_PACKAGES = ("fastapi", "uvicorn", "gymnasium", "numpy")


def peer_dir_or_skip() -> Path:
    if not (PEER / "serve.sh").is_file():
        pytest.skip(f"no AgentGym TextCraft peer at {PEER} (set ADAPT_TEST_SHARED)")
    missing = [name for name in PEER_PACKAGES if find_spec(name) is None]
    if missing:
        pytest.skip(f"the peer needs {', '.join(missing)}: pip install -e '.[test]'")
    return PEER


class Peer:
    """One peer process on ``port`` (which a test may kill and start again)."""

    def __init__(self, peer_dir: Path, log_path: Path, port: int | None = None) -> None:
        self.peer_dir = peer_dir
        self.log_path = log_path
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        bin_dir = str(Path(sys.executable).parent)  # serve.sh runs the first `python` on PATH
        env = {**os.environ, **PEER_ENV,
               "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([str(self.peer_dir / "serve.sh"), str(self.port)],
                                         stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the peer exited ({self.proc.returncode}): "
                                   f"{self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the peer did not answer in {timeout} s: "
                                   f"{self.log_path.read_text()[-2000:]}")
            time.sleep(0.1)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@contextmanager
def running_peer(peer_dir: Path, log_path: Path) -> Iterator[Peer]:
    peer = Peer(peer_dir, log_path)
    peer.start()
    try:
        yield peer
    finally:
        peer.stop()
