"""A stdio MCP proxy for tests that counts calls at the server: started as
``python mcp_proxy.py LOG [--slow TOOL SECONDS] -- COMMAND ARGS...``, it starts the real
server, passes every line both ways unchanged and appends one JSON line per ``tools/call``
request it forwards to LOG (tool name, arguments, the server's command line: which workspace
it works on). With ``--slow``, a call of TOOL is held that long before it is forwarded (after
it was logged as ``pending``), so a test can kill the worker while the call is in flight.
Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time


def main(argv: list[str]) -> int:
    log_path = argv[1]
    slow: dict[str, float] = {}
    rest = argv[2:]
    while rest and rest[0] == "--slow":
        slow[rest[1]] = float(rest[2])
        rest = rest[3:]
    command = rest[1:] if rest and rest[0] == "--" else rest
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lock = threading.Lock()

    def log(record: dict[str, object]) -> None:
        with lock, open(log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")

    def downstream() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    threading.Thread(target=downstream, daemon=True).start()
    assert server.stdin is not None
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params") or {}
            name = params.get("name")
            record = {"tool": name, "arguments": params.get("arguments"), "server": command,
                      "proxy": os.getpid(), "at": time.time()}
            if name in slow:
                log({**record, "pending": True})
                time.sleep(slow[name])
            log(record)
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
