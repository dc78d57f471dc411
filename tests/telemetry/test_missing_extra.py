"""A worker with trace export configured but without the ``otel`` extra logs a warning and
exports nothing; any other import error in the exporter's module is raised, not mistaken for
the extra missing."""

from __future__ import annotations

import logging
import sys

import pytest

from adapt.service.context import _telemetry
from adapt.settings import Settings


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    monkeypatch.delitem(sys.modules, "adapt.telemetry.otlp", raising=False)
    return Settings.model_validate({"ADAPT_DATABASE_URL": "sqlite:///unused.db"})


def test_without_the_extra_export_is_off_with_a_warning(
    configured: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.resources", None)  # not installed
    with caplog.at_level(logging.WARNING):
        assert _telemetry(configured) is None
    assert "'otel' extra is not installed" in caplog.text


def test_another_missing_module_is_raised(
    configured: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "adapt.telemetry.semconv", None)  # a broken install
    with pytest.raises(ModuleNotFoundError) as raised:
        _telemetry(configured)
    assert raised.value.name == "adapt.telemetry.semconv"
