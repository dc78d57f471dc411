"""Every attribute name adapt/telemetry/semconv.py writes outside its own ``adapt.*`` namespace
is one the official packages define: OpenTelemetry's GenAI (and error) conventions,
``opentelemetry-semantic-conventions``, or OpenInference's,
``openinference-semantic-conventions``; and so are the enumerated values it writes
(operation names, the provider, the tool type, OpenInference span kinds), but for the one
operation adapt adds, ``plan`` (docs/observability.md)."""

from __future__ import annotations

import inspect
import re

import pytest

from adapt.telemetry import semconv

otel_genai = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
otel_error = pytest.importorskip("opentelemetry.semconv.attributes.error_attributes")
openinference = pytest.importorskip("openinference.semconv.trace")

#: operations adapt names itself (the conventions allow a system's own values)
ADAPT_OPERATIONS = {"plan"}


def _constants(module: object) -> set[str]:
    return {v for k, v in vars(module).items() if k.isupper() and isinstance(v, str)}


def written_names() -> set[str]:
    """Every dotted string literal of the module that is not adapt's own (``adapt.*``)."""
    source = inspect.getsource(semconv)
    names = set(re.findall(r'"([a-z_]+(?:\.[a-z_]+)+)"', source))
    return {n for n in names if not n.startswith("adapt.")}


def test_the_module_writes_names_of_both_conventions() -> None:
    names = written_names()
    assert {"gen_ai.operation.name", "gen_ai.usage.cache_read.input_tokens",
            "openinference.span.kind", "llm.token_count.prompt", "tool.name"} <= names


def test_every_attribute_name_is_defined_by_an_official_package() -> None:
    otel = _constants(otel_genai) | _constants(otel_error)
    oi = _constants(openinference.SpanAttributes) | _constants(openinference.ToolAttributes)
    unknown = sorted(n for n in written_names() if n not in otel and n not in oi)
    assert unknown == [], f"not in the official semantic conventions: {unknown}"
    # each name belongs to the family it claims to
    assert all(n in otel for n in written_names() if n.startswith("gen_ai.") or n == "error.type")
    assert all(n in oi for n in written_names() if not n.startswith("gen_ai.")
               and n != "error.type")


def test_enumerated_values_are_the_conventions_values() -> None:
    source = inspect.getsource(semconv)
    operations = set(re.findall(r'"gen_ai\.operation\.name": "([a-z_]+)"', source))
    operations |= set(re.findall(r'return "([a-z_]+)" if .* else "([a-z_]+)"', source)[0])
    known = {v.value for v in otel_genai.GenAiOperationNameValues}
    assert operations - ADAPT_OPERATIONS <= known, operations - known
    assert {"chat", "text_completion", "invoke_agent", "invoke_workflow",
            "execute_tool"} <= operations
    tool_types = set(re.findall(r'"gen_ai\.tool\.type": "([a-z_]+)"', source))
    assert tool_types and tool_types <= {"function", "extension", "datastore"}
    assert semconv.provider("openai:gpt-4o-mini") in {
        v.value for v in otel_genai.GenAiProviderNameValues}
    kinds = {semconv.AGENT, semconv.CHAIN, semconv.LLM, semconv.TOOL}
    assert kinds <= {v.value for v in openinference.OpenInferenceSpanKindValues}
