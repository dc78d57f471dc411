"""Issue 14: an SSE stream stops writing when its client goes away (a finished task's stream
read with `| head` logged dozens of `socket.send() raised exception` warnings)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx

from tests.e2e.test_embedded_serve import Server, free_port, wait_for


def test_a_stream_closed_early_by_its_client_writes_no_more(tmp_path: Path) -> None:
    server = Server(tmp_path, free_port())
    server.start()
    try:
        body = {"environment": "textcraft", "environment_config": {"seed": 11}, "d_max": 4}
        task_id = httpx.post(f"{server.url}/tasks", json=body, timeout=10).json()["id"]
        wait_for(lambda: httpx.get(f"{server.url}/tasks/{task_id}", timeout=5).json()
                 ["finished"], 60, "the task to finish")
        for _ in range(5):  # what `curl -N .../events | head -c 300` does
            with socket.create_connection(("127.0.0.1", server.port)) as conn:
                conn.sendall(f"GET /tasks/{task_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Accept: text/event-stream\r\n\r\n".encode())
                assert conn.recv(300)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00"
                                b"\x00\x00\x00\x00")  # close with a reset, as head's exit does
        time.sleep(1.0)
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
    finally:
        server.stop()
    log = server.log.read_text()
    assert "socket.send() raised exception" not in log, log[-2000:]
