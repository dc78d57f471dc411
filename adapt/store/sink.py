"""``DbSink``: persists every engine event, as the tree grows.

Events are buffered and written in one transaction when the engine flushes, which it does before
every LLM call and at the end. An answered call is written when the task next waits, at the
latest in the flush before the next call, which then waits for it: a call is stored before the
next one is sent, so a crash or a database failure never pays for more than the call in flight
(and one answered in the instant before). With a synchronous environment the answer, the step
it led to and the node updates so go in one write (one write per call; writing the answer on
its own made two). A flush before a call with no answered call in it is written while the model
answers. Writes land one at a time, in order; a write's failure (e.g. a lost lease) is raised
at the next flush, so no call starts after it.
Each write starts with an UPDATE on the task row that is conditional on this attempt still
holding the lease; it allocates the batch's gap-free sequence numbers and updates the task's
aggregates. If another attempt took over, the UPDATE matches no row and the write is refused
with ``LeaseLost``. On PostgreSQL a whole batch is one statement (one round trip; see
``adapt.store.batch``), sent together with the other tasks' batches queued meanwhile
(``adapt.store.batch_group``).

Prompts are stored once, as content-addressed blocks (``adapt.store.prompts``): a call keeps
the ref of its prompt's last block; the ``llm_call`` event names the call without its prompt.
A call's ``response`` keeps only what its own columns do not already say (replay rebuilds the
whole response from both: ``adapt.store.task_rows.replay_material``).

A resumed attempt replays the run from the start; the first ``skip`` engine events were already
persisted by earlier attempts (identical, because LLM answers are replayed and environments are
deterministic), so they are not written again. Batches are atomic, so "events stored" is always
a prefix of the engine's event stream.

What a write learns about the attempt (a cancel request, a lease lost) goes to the attempt's
``AttemptControl`` (``adapt.store.attempt``), which the engine's cancel check reads; the sink
keeps no such state.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from adapt.engine.events import (
    Event,
    LLMCallMade,
    NodeCreated,
    NodeUpdated,
    StepAppended,
    TaskFinished,
    TreeSink,
)
from adapt.engine.tree import LLMCall
from adapt.store.attempt import AttemptControl
from adapt.store.batch import Batch, refused_for_a_block
from adapt.store.batch_group import write_grouped
from adapt.store.batch_sqlite import write_sqlite
from adapt.store.elided import stored_monitor, stored_plan, stored_request_model, stored_text
from adapt.store.event_log import compact
from adapt.store.models import utcnow
from adapt.store.prompts import PromptWriter, encode, known_blocks
from adapt.store.responses import response_extra

log = logging.getLogger(__name__)

MAX_BUFFER = 64  # write early if a flush is this long in coming
#: how a batch is written, by database (the two ``adapt.store.db`` accepts)
WRITERS = {"postgresql": write_grouped, "sqlite": write_sqlite}


class DbSink(TreeSink):
    """Writes one attempt's events under its lease (``task_id``, ``attempt``, ``owner``);
    ``control``: the attempt's handle, which hears what the writes learn (a new one when
    none is given)."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        task_id: str,
        attempt: int,
        owner: str,
        *,
        skip: int = 0,
        store_prompts: bool = True,
        control: AttemptControl | None = None,
    ) -> None:
        if control is not None and (control.task_id, control.attempt, control.owner) != (
                task_id, attempt, owner):
            raise ValueError("the attempt control is another attempt's")
        self.sessions = sessions
        self.task_id = task_id
        self.attempt = attempt
        self.owner = owner
        self.control = control or AttemptControl(task_id, attempt, owner)
        self.skip = skip
        #: the run's end when it came before the events stored already: a replay that
        #: diverged (the environment or the prompts changed since the calls were recorded).
        #: Not written here (its ordinal is taken); the worker ends the task outside the stream
        self.ended_in_replay: TaskFinished | None = None
        self.store_prompts = store_prompts
        self.ordinal = 0
        engine: AsyncEngine = sessions.kw["bind"]
        self._engine = engine
        self._write = WRITERS[engine.dialect.name]
        self._prompts = PromptWriter(known_blocks(engine.sync_engine))
        self._batch = Batch()
        #: the last write started (each write first waits for the one before it)
        self._pending: asyncio.Future[None] | None = None
        #: the start of a write of an answered call, when the task next waits
        self._due: asyncio.Handle | None = None
        #: every node's snapshot in its latest event (what the next ``node.updated`` is
        #: stored against: ``adapt.store.event_log``)
        self._nodes: dict[int, dict[str, Any]] = {}
        #: each node's latest LLM call: {completion: id} (a plan whose raw is its completion
        #: names it instead of holding it: ``adapt.store.elided``)
        self._last_call: dict[int, dict[str, int]] = {}

    async def emit(self, event: Event) -> None:
        self.ordinal += 1
        if self.ordinal <= self.skip:
            if isinstance(event, NodeCreated | NodeUpdated):  # stored: later events build on it
                self._nodes[event.node.id] = event.node.model_dump(mode="json")
            elif isinstance(event, LLMCallMade):
                self._called(event.call)
            elif isinstance(event, TaskFinished):
                self.ended_in_replay = event
            return
        self._add(event)
        if isinstance(event, TaskFinished) or len(self._batch.events) >= MAX_BUFFER:
            await self.flush()
        elif isinstance(event, LLMCallMade) and self._due is None:
            # an answered call is written when the task next waits (with what follows it
            # until then): a crash from then on does not pay for it again
            self._due = asyncio.get_running_loop().call_soon(self._start)

    def _add(self, event: Event) -> None:
        b = self._batch
        payload: dict[str, Any]
        if isinstance(event, NodeCreated | NodeUpdated):
            node = event.node.model_dump(mode="json")
            # the event log keeps what changed since the node's previous event
            payload = compact(event.type, {"node": node}, self._nodes.get(event.node.id))
            self._nodes[event.node.id] = node
            if node["plan"] is not None:  # the row's plan may name the call that wrote it
                plan = stored_plan(node["plan"], self._last_call.get(event.node.id, {}))
                node = {**node, "plan": plan} if plan is not node["plan"] else node
            if isinstance(event, NodeCreated) or event.node.id in b.created:
                b.created[event.node.id] = node
            else:
                b.updated[event.node.id] = node
        elif isinstance(event, StepAppended):
            step = event.step.model_dump(mode="json")
            payload = compact(event.type, {"step": step}, None)  # names the step's row
            # its text once when it is its raw (``adapt.store.elided``)
            b.steps.append({**step, "text": stored_text(step["text"], step["raw"])})
        elif isinstance(event, LLMCallMade):
            call = event.call
            self._called(call)
            # the event names the call's row (its prompt is stored once, as blocks)
            # (its tools are stored with its prompt, its tool calls with its response)
            data = call.model_dump(mode="json",
                                   exclude={"prompt", "messages", "tools", "tool_calls"})
            payload = compact(event.type, {"call": data}, None)
            ref = None
            if self.store_prompts:
                document = encode(call.prompt, call.messages, call.tools)
                if document is not None:
                    ref = self._prompts.add(call.node_id, call.role, document, b.blocks,
                                            b.chain)
            response = (event.response.model_dump(mode="json") if event.response is not None
                        else {"text": call.completion})
            b.calls.append({
                "id": call.id, "node_id": call.node_id, "role": call.role,
                "model": call.model,
                "request_model": stored_request_model(call.request_model, call.model),
                "simulated": call.simulated, "prompt_ref": ref,
                "chat": bool(call.messages),
                "stop": call.stop, "request_fingerprint": event.request_fingerprint,
                "response": response_extra(response, data), "completion": call.completion,
                "prompt_tokens": call.prompt_tokens,
                "completion_tokens": call.completion_tokens,
                "usage_estimated": call.usage_estimated, "latency_s": call.latency_s,
                "cost_usd": call.cost_usd, "monitor": stored_monitor(call.monitor),
                "retries": call.retries,
            })
        elif isinstance(event, TaskFinished):
            r = event.result
            result = r.model_dump(mode="json")
            payload = {"status": r.status, "result": result, "error": r.error}
            b.final = {"status": r.status, "success": r.success, "reward": r.reward,
                       "result": result, "error": r.error, "max_depth": r.max_depth,
                       "resolved_goal": r.goal}
        node_id = event.node.id if isinstance(event, NodeCreated | NodeUpdated) else None
        b.events.append({"type": event.type, "payload": payload, "ordinal": self.ordinal,
                         "node_id": node_id})

    def _called(self, call: LLMCall) -> None:
        if call.node_id is not None:
            self._last_call[call.node_id] = {call.completion: call.id}

    async def flush(self) -> None:
        """Write what is buffered, and wait for it (and for any earlier write)."""
        await self._settle()
        await self._write_now()

    async def flush_soon(self) -> None:
        """The engine's flush before an LLM call. The writes started before are awaited first
        (their failure, e.g. a lost lease, stops the task here, before the call). A batch that
        holds an answered call is awaited too (the answer is stored before the next call is
        sent); any other is written while the model answers, and awaited by the next flush."""
        answered = self._due is not None
        await self._settle()
        if answered:
            await self._write_now()
        else:
            self._start()

    def writing(self) -> asyncio.Future[None] | None:
        """The write under way in the background, if any."""
        return self._pending

    async def settle(self) -> None:
        """Write an answered call still buffered, and wait for the writes under way (their
        failure, e.g. ``LeaseLost``, is raised here)."""
        if self._due is not None:
            self._start()
        await self._settle()

    async def _write_now(self) -> None:
        """Write what is buffered and wait for it, with no write under way (no task)."""
        self._cancel_due()
        if self._batch.events:
            batch, self._batch = self._batch, Batch()
            await self._write_batch(batch)

    def _cancel_due(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None

    def _start(self) -> None:
        """Start writing what is buffered, after the write under way (if any)."""
        self._cancel_due()
        if not self._batch.events:
            return
        batch, self._batch = self._batch, Batch()
        self._pending = asyncio.ensure_future(self._write_after(self._pending, batch))
        self._pending.add_done_callback(_retrieve)

    async def _settle(self) -> None:
        # ``_pending`` stays set until its write is done: a write started meanwhile (an
        # answered call's, when this wait lets it) must chain after it, never run beside it
        while self._pending is not None:
            pending = self._pending
            try:
                await pending
            except BaseException:
                self._pending = None  # later writes chained to it fail with it
                raise
            if self._pending is pending:
                self._pending = None

    async def _write_after(self, before: asyncio.Future[None] | None, b: Batch) -> None:
        if before is not None:
            await before  # its failure is this write's too: later batches are not written
        await self._write_batch(b)

    async def _write_batch(self, b: Batch) -> None:
        costs = [c["cost_usd"] for c in b.calls]
        values = {
            "calls": len(b.calls),
            "prompt_tokens": sum(c["prompt_tokens"] for c in b.calls),
            "completion_tokens": sum(c["completion_tokens"] for c in b.calls),
            "cost_usd": None if None in costs else float(sum(costs)),
        }
        try:
            try:
                row = await self._write(self._engine, self.task_id, self.attempt, self.owner,
                                        b, values, utcnow())
            except Exception as exc:
                if not refused_for_a_block(exc):
                    raise
                # a block taken as stored was deleted meanwhile (the last task that used it
                # was deleted): nothing was written; send every block of the batch's chains
                log.info("task %s: a prompt block was deleted under a write; writing the "
                         "batch again with its blocks", self.task_id)
                self._prompts.known.clear()
                b.blocks = dict(b.chain)
                row = await self._write(self._engine, self.task_id, self.attempt, self.owner,
                                        b, values, utcnow())
        except Exception:
            # The database failed under us. What it acknowledged before may be gone (a server
            # that crashed with synchronous_commit=off loses its last commits), so no block is
            # taken as stored any more: later batches send theirs again (an insert of a block
            # already there does nothing) instead of pointing at a block that was lost.
            self._prompts.known.clear()
            raise
        if row is None:
            raise self.control.refused()
        _, cancel = row
        self.control.heard(cancel=bool(cancel))
        self._prompts.known.update(b.blocks)  # stored now: later batches need not send them


def _retrieve(write: asyncio.Future[None]) -> None:
    """A write nobody awaits any more (its task was cancelled) must not log as unretrieved;
    the next attempt's replay covers it."""
    if not write.cancelled():
        write.exception()
