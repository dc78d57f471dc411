"""LLM client spans in detail: the requested model (name, ``gen_ai.request.model``, the metric
label) apart from the model the response names, finish reasons, cached tokens, the ``chat``
operation, and a call the provider failed for good (its span, ERROR, ``error.type``).
Fakes for the model only; real SQLite and PostgreSQL for the service cases."""

from __future__ import annotations

from opentelemetry.trace import StatusCode

from adapt.engine import RunConfig, run_task
from adapt.engine.runtime import Run
from adapt.envs.textcraft import TextCraft
from adapt.errors import ProviderError, ProviderUnavailable
from adapt.llm.base import ChatModel, ChatRequest, ChatResponse, Message
from adapt.service.execute import execute_task
from adapt.sim import from_spec
from adapt.store import traces
from adapt.telemetry.history import rebuild
from adapt.telemetry.sink import OtelSink
from adapt.telemetry.spans import SpanRecord, TraceBuilder
from tests.service.helpers import insert_task
from tests.service.test_execute import SIM, make_ctx
from tests.telemetry.test_resume import settled_spans, spans_of, traced
from tests.telemetry.test_spans import INFO
from tests.telemetry.treeutil import from_records

ASKED, ANSWERED = "gpt-asked", "gpt-asked-2025-06-01"


class Provider:
    """The simulated model under another name, answering like a hosted provider: a dated
    model name, a finish reason and cached prompt tokens; or failing after ``fail_after``
    calls with ``error``."""

    simulated = False

    def __init__(self, *, fail_after: int | None = None,
                 error: Exception | None = None) -> None:
        self.inner: ChatModel = from_spec(SIM)
        self.name = ASKED
        self.fail_after = fail_after
        self.error = error
        self.calls = 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after and self.error:
            raise self.error
        r = await self.inner.complete(request)
        usage = r.usage.model_copy(update={"cached_tokens": min(r.usage.prompt_tokens, 16)})
        return r.model_copy(update={"model": ANSWERED, "finish_reason": "stop",
                                    "usage": usage})


def llm_spans(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in spans if s.kind == "client"]


async def test_request_and_response_models_finish_reasons_and_cached_tokens_live_and_exported(
        database_url: str) -> None:
    ctx = make_ctx(database_url, "w1", Provider())
    memory = traced(ctx)
    task_id = await insert_task(ctx.sessions, config={"seed": 11})
    assert await execute_task(ctx, task_id) == "succeeded"
    live = [s for s in spans_of(ctx, memory) if s.attributes.get("gen_ai.request.model")]
    history = await traces.task_history(ctx.sessions, task_id)
    assert history is not None
    async with ctx.sessions() as session:
        metrics = await traces.genai_histograms(session)
    await ctx.aclose()

    assert live
    for s in live:
        a = s.attributes
        assert s.name == f"text_completion {ASKED}", s.name
        assert a["gen_ai.request.model"] == ASKED and a["gen_ai.response.model"] == ANSWERED
        assert list(a["gen_ai.response.finish_reasons"]) == ["stop"]
        assert 0 < a["gen_ai.usage.cache_read.input_tokens"] <= 16
        assert "error.type" not in a
    exported = {s.span_id: s for s in from_records(rebuild(history, content=False))}
    for s in live:
        assert exported[s.span_id].name == s.name
        assert exported[s.span_id].attributes == s.attributes
    assert {m.model for m in metrics} == {ASKED}, "the metric's label is the requested model"


async def test_a_chat_call_is_a_chat_span_named_after_the_requested_model() -> None:
    spans: list[SpanRecord] = []
    model = Provider()
    run = Run(TextCraft(), RunConfig(d_max=4), model,
              sink=OtelSink(TraceBuilder(INFO), spans.extend))
    node = await run.new_node(goal="say hi")
    request = ChatRequest(messages=[Message(role="system", content="Be brief."),
                                    Message(role="user", content="Say hi.")], role="executor")
    await run.call(model, request, node)
    (span,) = llm_spans(spans)
    assert span.name == f"chat {ASKED}"
    assert span.attributes["gen_ai.operation.name"] == "chat"
    assert span.attributes["gen_ai.response.model"] == ANSWERED
    assert span.attributes["gen_ai.response.finish_reasons"] == ["stop"]


async def test_a_call_that_fails_for_good_has_its_client_span_with_error_type() -> None:
    spans: list[SpanRecord] = []
    model = Provider(fail_after=3, error=ProviderError("HTTP 400: the prompt is too long"))
    result = await run_task(TextCraft(), {"seed": 11}, RunConfig(d_max=4), model,
                            sink=OtelSink(TraceBuilder(INFO), spans.extend))
    assert result.status == "error"
    calls = llm_spans(spans)
    assert len(calls) == 4 and len({s.span_id for s in calls}) == 4
    failed = calls[-1]
    assert failed.error == "ProviderError: HTTP 400: the prompt is too long"
    assert failed.attributes["error.type"] == "ProviderError"
    assert failed.attributes["gen_ai.request.model"] == ASKED
    assert "gen_ai.response.model" not in failed.attributes
    assert failed.name.endswith(f" {ASKED}")
    by_id = {s.span_id: s for s in spans}
    assert failed.parent_id in by_id, "the failed call hangs in the tree"
    assert all("error.type" not in s.attributes for s in calls[:-1])


async def test_a_provider_that_stays_down_leaves_an_error_span_in_the_live_export(
        database_url: str) -> None:
    down = ProviderUnavailable("HTTP 503 from the provider", retries=4)
    ctx = make_ctx(database_url, "w1", Provider(fail_after=2, error=down))
    memory = traced(ctx)
    task_id = await insert_task(ctx.sessions, config={"seed": 11})
    assert await execute_task(ctx, task_id) == "error"
    spans = await settled_spans(ctx, memory)
    status = {s.context.span_id: s.status.status_code for s in memory.get_finished_spans()}
    await ctx.aclose()
    calls = [s for s in spans if s.attributes.get("gen_ai.request.model")]
    assert len(calls) == 3
    (failed,) = [s for s in calls if "error.type" in s.attributes]
    assert failed.attributes["error.type"] == "ProviderUnavailable"
    assert failed.attributes["adapt.llm.retries"] >= 1  # the service retried it first
    assert status[failed.span_id] == StatusCode.ERROR
