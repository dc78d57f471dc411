"""A webhook receiver, run as its own process by the tests: answers POSTs and appends each
request (headers, body) as one JSON line to a file.

    python -m tests.webhooks.receiver LOG [--fail-first N] [--hang SECONDS] [--host H] [--port P]
        [--huge MB] [--trickle SECONDS] [--trickle-body SECONDS]

Prints its port on the first line of stdout once it listens (on 127.0.0.1 unless --host).

The answers of a hostile receiver: ``--huge MB`` answers 200 with a body of MB mebibytes,
generated as it is sent; ``--trickle S`` sends its status line and an endless header one byte
every S seconds; ``--trickle-body S`` sends a 200 and its headers at once, then the body one
byte every S seconds. Each of those appends a second line once the client has gone (or the
answer is complete): ``{"n", "ended", "sent_bytes"}``.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from typing import Any

from tests.support.httpreceiver import QuietHandler, serve

CHUNK = b"x" * 65536


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--hang", type=float, default=0.0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--huge", type=int, default=0)
    parser.add_argument("--trickle", type=float, default=0.0)
    parser.add_argument("--trickle-body", type=float, default=0.0)
    args = parser.parse_args()
    lock = threading.Lock()
    seen = [0]

    def write(entry: dict[str, Any]) -> None:
        with lock, open(args.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with lock:
                seen[0] += 1
                n = seen[0]
            status = 500 if n <= args.fail_first else 200
            write({"n": n, "status": status, "at": time.time(),
                   "headers": {k.lower(): v for k, v in self.headers.items()},
                   "body": body.decode("utf-8")})
            if args.hang:
                time.sleep(args.hang)
            if args.huge or args.trickle or args.trickle_body:
                self.sent = 0
                try:
                    self.hostile_answer()
                finally:
                    write({"n": n, "ended": time.time(), "sent_bytes": self.sent})
                return
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def send_raw(self, data: bytes) -> None:
            self.wfile.write(data)
            self.wfile.flush()
            self.sent += len(data)

        def hostile_answer(self) -> None:
            try:
                if args.trickle:
                    for byte in b"HTTP/1.1 200 OK\r\nx-slow: " + b"a" * 10_000_000:
                        self.send_raw(bytes([byte]))
                        time.sleep(args.trickle)
                size = args.huge * 1024 * 1024 or 10_000_000
                self.send_raw(f"HTTP/1.1 200 OK\r\ncontent-length: {size}\r\n\r\n".encode())
                body_starts = self.sent
                while self.sent - body_starts < size:
                    if args.trickle_body:
                        self.send_raw(b"x")
                        time.sleep(args.trickle_body)
                    else:
                        self.send_raw(CHUNK[:size - (self.sent - body_starts)])
            except OSError:  # the client went away
                pass
            self.close_connection = True

    serve(Handler, args.host, args.port)


if __name__ == "__main__":
    main()
