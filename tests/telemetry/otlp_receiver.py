"""A slow OTLP/HTTP trace receiver, run as its own process by the tests: takes each
``POST /v1/traces`` (protobuf), waits ``--delay`` seconds, answers 200 and appends the span ids
it got as one JSON line to a file.

    python -m tests.telemetry.otlp_receiver LOG [--delay SECONDS]

Prints its port on the first line of stdout once it listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import threading
import time

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support.httpreceiver import QuietHandler, serve


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    lock = threading.Lock()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            request = ExportTraceServiceRequest.FromString(body)
            ids = [f"{s.trace_id.hex()}/{s.span_id.hex()}" for rs in request.resource_spans
                   for ss in rs.scope_spans for s in ss.spans]
            time.sleep(args.delay)
            with lock, open(args.log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"path": self.path, "spans": ids}) + "\n")
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    serve(Handler)


if __name__ == "__main__":
    main()
