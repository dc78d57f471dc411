"""A webhook receiver seen from the test: its URL, and the requests its process logged
(the process: ``python -m tests.webhooks.receiver``)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Receiver:
    url: str
    log: Path
    proc: subprocess.Popen[str]

    def lines(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def requests(self) -> list[dict[str, Any]]:
        return [line for line in self.lines() if "headers" in line]

    def endings(self) -> list[dict[str, Any]]:
        """When each hostile answer ended (``--huge``, ``--trickle``...) and the bytes sent."""
        return [line for line in self.lines() if "ended" in line]
