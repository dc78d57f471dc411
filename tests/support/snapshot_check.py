"""A check for tests: ``python snapshot_check.py OUT VERIFY``: appends the workspace's files
(relative path -> SHA-256) as one JSON line to OUT, then runs VERIFY (an MCPMark verify.py)
and exits with its status. Standard library only."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path


def main(out: str, verify: str) -> int:
    root = Path(os.environ["FILESYSTEM_TEST_DIR"])
    files = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(root.rglob("*")) if p.is_file()}
    with open(out, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(files, sort_keys=True) + "\n")
    return subprocess.run([sys.executable, verify], check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
