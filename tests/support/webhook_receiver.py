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

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]
