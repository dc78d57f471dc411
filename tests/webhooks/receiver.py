"""A webhook receiver, run as its own process by the tests: answers POSTs and appends each
request (headers, body) as one JSON line to a file.

    python -m tests.webhooks.receiver LOG [--fail-first N] [--hang SECONDS] [--host H] [--port P]

Prints its port on the first line of stdout once it listens (on 127.0.0.1 unless --host).
"""

from __future__ import annotations

import argparse
import json
import threading
import time

from tests.support.httpreceiver import QuietHandler, serve


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--hang", type=float, default=0.0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    lock = threading.Lock()
    seen = [0]

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with lock:
                seen[0] += 1
                n = seen[0]
                status = 500 if n <= args.fail_first else 200
                with open(args.log, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"n": n, "status": status, "at": time.time(),
                                        "headers": {k.lower(): v for k, v in
                                                    self.headers.items()},
                                        "body": body.decode("utf-8")}) + "\n")
            if args.hang:
                time.sleep(args.hang)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

    serve(Handler, args.host, args.port)


if __name__ == "__main__":
    main()
