"""Issue 27, the HTTP edge, against a real `adapt serve` on 127.0.0.1: DNS rebinding (unknown
Host names), cross-site requests (a foreign Origin, form and text/plain bodies), the event
streams one tenant may hold open, and connections that send their headers or body too slowly
(slowloris). Every check is bounded in connections and seconds."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.simserver import SimServer, start_sim_server, stop_sim_server
from tests.ui.harness import Server, wait_for

CONFIGURED = "adapt.example.test"
STREAMS = 3
HEADER_TIMEOUT = 1.5
BODY_TIMEOUT = 2.0


@dataclass
class Edge:
    server: Server
    sim: SimServer
    keys: dict[str, str]

    @property
    def port(self) -> int:
        return self.server.port

    def headers(self, tenant: str = "a", **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[tenant]}", **extra}

    def running_task(self, tenant: str = "a") -> str:
        """A task that keeps running for a while (a slow simulated model)."""
        model = f"openai:sim:textcraft?capability=1@{self.sim.base_url}"
        body = {"environment": "textcraft", "environment_config": {"seed": 11}, "d_max": 4,
                "executor": {"model": model}}
        created = httpx.post(f"{self.server.url}/tasks", json=body,
                             headers=self.headers(tenant), timeout=10)
        assert created.status_code == 202, created.text
        task_id: str = created.json()["id"]
        return task_id

    def status(self, task_id: str, tenant: str = "a") -> str:
        task = httpx.get(f"{self.server.url}/tasks/{task_id}", headers=self.headers(tenant),
                         timeout=10).json()
        status: str = task["status"]
        return status


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    sim = start_sim_server(latency=2.0)
    server = Server(Path(tmp_path_factory.mktemp("edge")))
    try:
        server.start(ADAPT_LLM_ENDPOINTS=json.dumps([sim.base_url]),
                     ADAPT_ALLOWED_HOSTS=json.dumps([CONFIGURED]),
                     ADAPT_TENANT_MAX_EVENT_STREAMS=str(STREAMS),
                     ADAPT_HTTP_HEADER_TIMEOUT_SECONDS=str(HEADER_TIMEOUT),
                     ADAPT_HTTP_BODY_TIMEOUT_SECONDS=str(BODY_TIMEOUT))
        keys = {tenant: server.create_key(tenant) for tenant in ("a", "b")}
        yield Edge(server, sim, keys)
    finally:
        server.stop()
        stop_sim_server(sim)


def request(edge: Edge, method: str, path: str, **kwargs: Any) -> httpx.Response:
    with httpx.Client(base_url=edge.server.url, timeout=10) as client:
        return client.request(method, path, **kwargs)


def refused(response: httpx.Response, status: int, field: str) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert [e["field"] for e in body["errors"]] == [field], body
    return body


# -- DNS rebinding -----------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["rebind.attacker.test:{port}", "rebind.attacker.test",
                                  "localhost.attacker.test:{port}", "127.0.0.1.nip.io:{port}",
                                  "evil", "", "a b"])
def test_a_host_the_server_does_not_know_is_refused(edge: Edge, host: str) -> None:
    """What a page on http://rebind.attacker.test:PORT sends once its name points at
    127.0.0.1: its own name as the Host. It reads nothing and creates nothing."""
    name = host.format(port=edge.port)
    body = refused(request(edge, "GET", "/tasks", headers=edge.headers(Host=name)), 421, "Host")
    assert "ADAPT_ALLOWED_HOSTS" in body["detail"]
    create = request(edge, "POST", "/webhooks", json={"url": "https://hooks.example.com/x"},
                     headers=edge.headers(Host=name))
    refused(create, 421, "Host")
    assert request(edge, "GET", "/webhooks", headers=edge.headers()).json()["items"] == []


@pytest.mark.parametrize("host", ["localhost:{port}", "localhost", "LOCALHOST.:{port}",
                                  "127.0.0.1:{port}", "127.0.0.1", "[::1]:{port}", "[::1]",
                                  "127.0.0.5:{port}", f"{CONFIGURED}", f"{CONFIGURED}:443"])
def test_local_and_configured_hosts_are_answered(edge: Edge, host: str) -> None:
    response = request(edge, "GET", "/tasks",
                       headers=edge.headers(Host=host.format(port=edge.port)))
    assert response.status_code == 200, response.text
    assert request(edge, "GET", "/healthz",
                   headers={"Host": host.format(port=edge.port)}).status_code == 200


# -- cross-site requests -----------------------------------------------------------------------
@pytest.mark.parametrize("origin", ["http://attacker.test", "http://attacker.test:{port}",
                                    "http://127.0.0.1:1", "null",
                                    "http://localhost:{port}", "file://"])
def test_a_foreign_origin_cannot_change_anything(edge: Edge, origin: str) -> None:
    """POST, DELETE and PATCH from another origin are 403 before any route runs, whatever the
    route would have answered (202, 404, 405)."""
    task_id = edge.running_task()
    foreign = edge.headers(Origin=origin.format(port=edge.port))
    refused(request(edge, "POST", f"/tasks/{task_id}/cancel", headers=foreign), 403, "Origin")
    assert edge.status(task_id) != "cancelled"
    before = len(request(edge, "GET", "/tasks", headers=edge.headers()).json()["items"])
    refused(request(edge, "POST", "/tasks", json={"environment": "textcraft"},
                    headers=foreign), 403, "Origin")
    assert len(request(edge, "GET", "/tasks", headers=edge.headers()).json()["items"]) == before
    refused(request(edge, "DELETE", "/webhooks/w1", headers=foreign), 403, "Origin")
    refused(request(edge, "PATCH", f"/tasks/{task_id}", headers=foreign), 403, "Origin")
    # reads stay open to every origin: a browser cannot see a cross-origin answer anyway
    assert request(edge, "GET", "/tasks", headers=foreign).status_code == 200
    request(edge, "POST", f"/tasks/{task_id}/cancel", headers=edge.headers())


def test_a_browser_marked_cross_site_request_without_origin_is_refused(edge: Edge) -> None:
    task_id = edge.running_task()
    marked = edge.headers(**{"Sec-Fetch-Site": "cross-site"})
    refused(request(edge, "POST", f"/tasks/{task_id}/cancel", headers=marked), 403,
            "Sec-Fetch-Site")
    assert edge.status(task_id) != "cancelled"
    same = edge.headers(**{"Sec-Fetch-Site": "same-origin"})
    assert request(edge, "POST", f"/tasks/{task_id}/cancel", headers=same).status_code == 200


@pytest.mark.parametrize(("origin", "host"), [
    (None, None),                                     # curl, SDKs: no Origin at all
    ("http://127.0.0.1:{port}", None),                # the viewer's own pages
    ("http://localhost:{port}", "localhost:{port}"),
    ("http://[::1]:{port}", "[::1]:{port}"),
    (f"https://{CONFIGURED}", f"{CONFIGURED}"),        # behind a TLS proxy with that name
    (f"https://{CONFIGURED}", "127.0.0.1:{port}"),     # a proxy that rewrites the Host
])
def test_same_origin_and_origin_less_requests_pass(edge: Edge, origin: str | None,
                                                    host: str | None) -> None:
    task_id = edge.running_task()
    extra = {k: v.format(port=edge.port) for k, v in (("Origin", origin), ("Host", host)) if v}
    response = request(edge, "POST", f"/tasks/{task_id}/cancel", headers=edge.headers(**extra))
    assert response.status_code == 200, response.text
    wait_for(lambda: edge.status(task_id) == "cancelled", 10, "the task to be cancelled")


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x",
                                          "text/plain;charset=UTF-8", "TEXT/PLAIN"])
def test_form_and_text_bodies_are_refused_even_where_no_body_is_read(
        edge: Edge, content_type: str) -> None:
    """The content types a form (or a fetch without a CORS preflight) can send: 415 on cancel,
    which reads no body, and on POST /tasks; the task goes on."""
    task_id = edge.running_task()
    for body in (b"", b"x=1"):
        response = request(edge, "POST", f"/tasks/{task_id}/cancel", content=body,
                           headers=edge.headers(**{"Content-Type": content_type}))
        refused(response, 415, "content-type")
    assert edge.status(task_id) != "cancelled"
    refused(request(edge, "POST", "/tasks", content=b'{"environment": "textcraft"}',
                    headers=edge.headers(**{"Content-Type": content_type})),
            415, "content-type")
    ok = request(edge, "POST", f"/tasks/{task_id}/cancel",
                 headers=edge.headers(**{"Content-Type": "application/json"}))
    assert ok.status_code == 200, ok.text


# -- event streams per tenant ------------------------------------------------------------------
def test_a_tenant_holds_at_most_the_configured_event_streams(edge: Edge) -> None:
    """N streams of one tenant open, the next is 429 with Retry-After, another tenant is not
    affected, and closing a stream frees its slot."""
    task_a, task_b = edge.running_task("a"), edge.running_task("b")
    client = httpx.Client(base_url=edge.server.url, timeout=10)
    opened: list[Any] = []

    def open_stream(tenant: str, task_id: str) -> httpx.Response:
        context = client.stream("GET", f"/tasks/{task_id}/events",
                                headers=edge.headers(tenant, Accept="text/event-stream"))
        response = context.__enter__()
        opened.append(context)
        if response.status_code == 200:
            chunks = response.iter_text()
            opened.append(chunks)  # dropping the iterator would close the connection
            assert next(chunks).startswith("retry:")  # the stream started
        return response

    try:
        for _ in range(STREAMS):
            assert open_stream("a", task_a).status_code == 200
        extra = open_stream("a", task_a)
        extra.read()
        assert extra.status_code == 429, extra.text
        assert extra.headers["retry-after"].isdigit()
        assert "ADAPT_TENANT_MAX_EVENT_STREAMS" in extra.json()["detail"]
        assert open_stream("b", task_b).status_code == 200  # another tenant: unaffected
        # polling is not limited
        page = request(edge, "GET", f"/tasks/{task_a}/events?since=0", headers=edge.headers())
        assert page.status_code == 200

        opened[0].__exit__(None, None, None)  # the client closes one stream
        deadline = time.monotonic() + 5
        while True:
            again = open_stream("a", task_a)
            if again.status_code == 200:
                break
            again.read()
            assert time.monotonic() < deadline, "a closed stream's slot was not freed"
            time.sleep(0.2)
    finally:
        for context in opened:
            if hasattr(context, "__exit__"):
                context.__exit__(None, None, None)
        client.close()
        for tenant, task_id in (("a", task_a), ("b", task_b)):
            request(edge, "POST", f"/tasks/{task_id}/cancel", headers=edge.headers(tenant))


# -- slow clients ------------------------------------------------------------------------------
def _closed(conn: socket.socket) -> bool:
    try:
        return conn.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_connections_that_send_partial_headers_are_closed_within_the_deadline(
        edge: Edge) -> None:
    """100 connections: 40 send nothing, 40 send a header line every 0.3 s (slowloris), 20
    complete one request and then start another they never finish. All are closed within the
    header deadline plus a margin, while the server keeps answering."""
    bound = HEADER_TIMEOUT + 2.5
    silent = [socket.create_connection(("127.0.0.1", edge.port)) for _ in range(40)]
    dribbling = [socket.create_connection(("127.0.0.1", edge.port)) for _ in range(40)]
    kept = [socket.create_connection(("127.0.0.1", edge.port)) for _ in range(20)]
    head = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{edge.port}\r\n"
    for conn in kept:  # a whole request and its answer, then a partial one
        conn.sendall((head + "\r\n").encode())
        assert conn.recv(4096).startswith(b"HTTP/1.1 200")
    start = time.monotonic()
    for conn in dribbling + kept:
        conn.sendall(head.encode())
    every = silent + dribbling + kept
    for conn in every:
        conn.setblocking(False)
    open_ones = set(every)
    closed_after: list[float] = []
    try:
        while open_ones and time.monotonic() - start < bound + 1:
            for conn in list(open_ones):
                if _closed(conn):
                    open_ones.discard(conn)
                    closed_after.append(time.monotonic() - start)
                elif conn in dribbling:
                    with contextlib.suppress(OSError):
                        conn.send(b"X-Slow: 1\r\n")
            assert httpx.get(f"{edge.server.url}/healthz", timeout=2).status_code == 200
            time.sleep(0.3)
    finally:
        for conn in every:
            conn.close()
    assert not open_ones, f"{len(open_ones)} of 100 connections still open after {bound + 1} s"
    assert max(closed_after) <= bound, max(closed_after)
    assert min(closed_after) >= HEADER_TIMEOUT - 0.5, min(closed_after)


def test_a_body_sent_too_slowly_is_answered_408(edge: Edge) -> None:
    """Headers in time, then the body a byte every 0.3 s: 408 at the body deadline."""
    conn = socket.create_connection(("127.0.0.1", edge.port))
    conn.settimeout(0.3)
    try:
        conn.sendall(f"POST /tasks HTTP/1.1\r\nHost: 127.0.0.1:{edge.port}\r\n"
                     f"Authorization: Bearer {edge.keys['a']}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{".encode())
        start = time.monotonic()
        answer = b""
        while time.monotonic() - start < BODY_TIMEOUT + 4:
            try:
                answer = conn.recv(4096)
                break
            except TimeoutError:
                conn.sendall(b" ")  # never the whole body
        took = time.monotonic() - start
        assert answer.startswith(b"HTTP/1.1 408"), (took, answer[:300])
        assert b"ADAPT_HTTP_BODY_TIMEOUT_SECONDS" in answer
        assert BODY_TIMEOUT - 0.5 <= took <= BODY_TIMEOUT + 2, took
    finally:
        conn.close()
