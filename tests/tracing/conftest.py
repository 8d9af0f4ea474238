"""Fixtures for the tracing tests: spans recorded by the OpenTelemetry SDK's own in-memory
exporter, and a tools.yaml whose script prints the trace context it was given."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpcli import spans

#: A tool that prints its TRACEPARENT and TRACESTATE ("-" when unset); `fail` exits 3.
TOOLS = """\
version: 1
tools:
  - name: trace
    description: Prints the trace context it was given.
    run:
      shell: sh
      script: 'printf "%s %s" "${TRACEPARENT:--}" "${TRACESTATE:--}"'
  - name: fail
    description: Fails.
    run:
      shell: sh
      script: 'exit 3'
"""


@pytest.fixture
def tools_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "tools.yaml"
    path.write_text(TOOLS)
    return path


@pytest.fixture
def recorded() -> Iterator[Any]:
    """Every span this process makes, in an `InMemorySpanExporter` (ended spans, in order)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans.use(provider)
    yield exporter
    spans.disable()
    provider.shutdown()
