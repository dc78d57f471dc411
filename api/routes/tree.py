"""``/tasks/{id}/tree`` and ``/tasks/{id}/nodes/{node_id}``: the decomposition tree."""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Annotated, Protocol

import orjson
from fastapi import APIRouter, Header, Path, Request, Response

from api.deps import TaskServiceDep
from api.routes.tasks import PROBLEMS
from api.schemas import LLMCallPublic, NodeDetail, StepPublic, TaskTree, TreeNode

log = logging.getLogger(__name__)

router = APIRouter(prefix="/tasks", tags=["tree"])


class _TaskState(Protocol):  # a task row, as the service returns it
    @property
    def id(self) -> str: ...
    @property
    def last_seq(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def cancel_requested(self) -> bool: ...


class _NodeRow(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def parent_id(self) -> int | None: ...


def tree_etag(task: _TaskState) -> str:
    """Changes whenever the tree response can: every node change appends an event (last_seq),
    and status / cancel flag changes are included."""
    key = f"{task.id}:{task.last_seq}:{task.status}:{int(task.cancel_requested)}"
    return '"' + hashlib.sha256(key.encode()).hexdigest()[:32] + '"'


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Weak comparison (RFC 9110 13.1.2): ``W/`` prefixes are ignored; ``*`` matches."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag == etag:
            return True
    return False


def build_tree(rows: Sequence[_NodeRow]) -> TreeNode | None:
    """Nest flat rows (ordered by parent, position, id) under the root; no further queries.
    (The pydantic form of the ``tree`` of :meth:`TaskService.tree`.)"""
    nodes = {row.id: TreeNode.model_validate(row) for row in rows}
    roots: list[TreeNode] = []
    for row in rows:
        node = nodes[row.id]
        parent = nodes.get(row.parent_id) if row.parent_id is not None else None
        if parent is None:
            roots.append(node)
        else:
            parent.children.append(node)
    if not roots:
        return None
    roots.sort(key=lambda n: n.id)
    if len(roots) > 1:
        log.warning("task tree has %d parentless nodes (%s); showing node %d as the root",
                    len(roots), [n.id for n in roots], roots[0].id)
    return roots[0]


class RenderedTrees:
    """Rendered tree bodies of finished tasks by ETag (a finished task's tree changes only
    with its ETag), the most recently used first out of ``max_bytes``."""

    def __init__(self, max_bytes: int = 64 * 2**20) -> None:
        self.max_bytes = max_bytes
        self._bodies: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0

    def get(self, etag: str) -> bytes | None:
        body = self._bodies.get(etag)
        if body is not None:
            self._bodies.move_to_end(etag)
        return body

    def put(self, etag: str, body: bytes) -> None:
        if len(body) > self.max_bytes or etag in self._bodies:
            return
        self._bodies[etag] = body
        self._size += len(body)
        while self._size > self.max_bytes:
            _, old = self._bodies.popitem(last=False)
            self._size -= len(old)


@router.get(
    "/{task_id}/tree",
    response_model=TaskTree,
    summary="The whole decomposition tree",
    description=(
        "The tree as nested JSON (each node with its `children`), built from one query however "
        "large the tree. Before the first node exists, `tree` is null. Responses carry an "
        "`ETag`; send it back in `If-None-Match` to get **304 Not Modified** while nothing "
        "changed (cheap polling)."
    ),
    responses={**PROBLEMS, 304: {"description": "Not modified since the given ETag"}},
)
async def get_tree(
    task_id: str,
    request: Request,
    service: TaskServiceDep,
    if_none_match: Annotated[str | None, Header(alias="If-None-Match")] = None,
) -> Response:
    task = await service.task(task_id)
    etag = tree_etag(task)
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if etag_matches(if_none_match, etag):
        return Response(status_code=304, headers=headers)
    cache: RenderedTrees | None = getattr(request.app.state, "rendered_trees", None)
    body = cache.get(etag) if cache is not None and task.finished else None
    if body is None:
        body = orjson.dumps(await service.tree(task))  # the TaskTree document, as it is
        if cache is not None and task.finished:
            cache.put(etag, body)
    return Response(body, media_type="application/json", headers=headers)


@router.get(
    "/{task_id}/nodes/{node_id}",
    response_model=NodeDetail,
    summary="One node with its plan, trajectory and LLM calls",
    responses=PROBLEMS,
)
async def get_node(
    task_id: str,
    node_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    service: TaskServiceDep,
) -> NodeDetail:
    view = await service.node(task_id, node_id)
    prompts = view.prompts
    return NodeDetail.model_validate(view.node).model_copy(update=dict(
        children=view.children, steps=[StepPublic.model_validate(s) for s in view.steps],
        llm_calls=[LLMCallPublic.model_validate(c).model_copy(update={
            "prompt": prompts[c.id].prompt, "messages": prompts[c.id].messages,
            "tools": prompts[c.id].tools})
            for c in view.calls]))
