"""The serving tail the tests' receiver processes share (``tests.webhooks.receiver``,
``tests.telemetry.otlp_receiver``): a threading HTTP server that prints its port on the first
line of stdout once it listens, and serves until interrupted."""

from __future__ import annotations

import contextlib
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing to stderr."""

    def log_message(self, format: str, *a: object) -> None:
        return

    def send_json(self, data: object, status: int = 200) -> None:
        """Answer ``data`` as JSON."""
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    #: connections waiting to be accepted (socketserver's 5 drops some of 20 opened at once)
    request_queue_size = 128


def serve(handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1", port: int = 0) -> None:
    """Serve ``handler`` on ``host:port`` (0: a free port), announcing the port; exits 0."""
    server = _Server((host, port), handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    sys.exit(0)
