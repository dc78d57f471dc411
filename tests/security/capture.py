"""A tiny OpenAI-compatible HTTP server on a loopback port that records what it receives (the
``Authorization`` header above all) and answers with a fixed completion or a fixed error."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Capture:
    base_url: str
    status: int = 200
    text: str = "think: I will craft it."
    body: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def authorizations(self) -> list[str | None]:
        return [r["authorization"] for r in self.requests]


@contextmanager
def capture_server(**options: Any) -> Iterator[Capture]:
    cap = Capture(base_url="", **options)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            cap.requests.append({"path": self.path,
                                 "authorization": self.headers.get("authorization")})
            if cap.status != 200:
                payload = cap.body.encode()
            else:
                payload = json.dumps({
                    "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": cap.text}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
                }).encode()
            self.send_response(cap.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    cap.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield cap
    finally:
        server.shutdown()
        server.server_close()
