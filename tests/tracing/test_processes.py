"""Through real processes: `mcp` (client) -> `mcp serve --proxy` (gateway) -> `mcp serve
tools.yaml` -> a script that prints its TRACEPARENT, in every protocol era.

Without spans the trace context is passed on unchanged, hop after hop, to the script.
With OTEL_EXPORTER_OTLP_ENDPOINT pointing at a collector (a small OTLP receiver here),
every process sends its spans, and each hop's parent is the span before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import free_port, listening, mcp, mcp_argv

from tracing.otlp_receiver import Received, otlp_receiver

pytestmark = pytest.mark.slow

TRACE = "0af7651916cd43dd8448eb211c80319c"
GIVEN = f"00-{TRACE}-00f067aa0ba902b7-01"
STATE = "rojo=00f067aa0ba902b7"
ERAS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


@pytest.mark.parametrize("version", [None, *ERAS], ids=["negotiated (fast path)", *ERAS])
def test_the_trace_reaches_the_script_through_the_gateway(tools_yaml: Path, version: str | None) -> None:
    forced = ["--protocol", version] if version else []
    r = mcp("tools", "call", "trace", *forced, "--", *mcp_argv("serve", "--proxy", "--", *mcp_argv("serve", str(tools_yaml))),
            env={"TRACEPARENT": GIVEN, "TRACESTATE": STATE})
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == f"{GIVEN} {STATE}"
    r = mcp("tools", "call", "trace", *forced, "--", *mcp_argv("serve", "--proxy", "--", *mcp_argv("serve", str(tools_yaml))))
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "- -"  # no trace given, none made up


def _one(spans: list[Received], service: str, kind: str) -> Received:
    found = [s for s in spans if s.service == service and s.kind == kind]
    assert len(found) == 1, spans
    return found[0]


@pytest.mark.parametrize("version", ERAS)
def test_every_process_sends_its_spans_each_the_child_of_the_hop_before(tools_yaml: Path, version: str) -> None:
    """Over HTTP (the gateway and serve run until stopped, and send their spans as they stop)."""
    with otlp_receiver() as collector:
        otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}
        serve_port, gateway_port = free_port(), free_port()
        with listening(mcp_argv("serve", str(tools_yaml), "--http", f"127.0.0.1:{serve_port}", "--no-auth"),
                       serve_port, env={**otel, "OTEL_SERVICE_NAME": "upstream"}) as upstream, \
             listening(mcp_argv("serve", "--http", f"127.0.0.1:{gateway_port}", "--no-auth", "--proxy", upstream),
                       gateway_port, env={**otel, "OTEL_SERVICE_NAME": "gateway"}) as gateway:
            r = mcp("tools", "call", gateway, "trace", "--protocol", version,
                    env={**otel, "TRACEPARENT": GIVEN, "TRACESTATE": STATE})
            assert r.code == 0, r
        # All three have stopped: the client at exit, the servers on SIGTERM, each flushing its spans.
        calls = collector.named("tools/call trace")
    client = _one(calls, "mcpcli", "CLIENT")
    gateway_in = _one(calls, "gateway", "SERVER")
    gateway_out = _one(calls, "gateway", "CLIENT")
    upstream_in = _one(calls, "upstream", "SERVER")
    assert {s.trace_id for s in calls} == {TRACE}
    assert client.parent_id == GIVEN.split("-")[2]
    assert gateway_in.parent_id == client.span_id
    assert gateway_out.parent_id == gateway_in.span_id
    assert upstream_in.parent_id == gateway_out.span_id
    assert r.json["content"][0]["text"] == f"00-{TRACE}-{upstream_in.span_id}-01 {STATE}"
    for span in (client, gateway_in):
        assert span.attributes["mcp.protocol.version"] == version
    for span in calls:
        assert span.attributes["mcp.method.name"] == "tools/call"
        assert span.attributes["gen_ai.tool.name"] == "trace"
        assert span.attributes["network.transport"] == "tcp"
        assert span.attributes["network.protocol.name"] == "http"
        assert span.status == 0  # unset: no error
    if version in ("2025-11-25", "2025-06-18", "2025-03-26"):  # a Streamable HTTP session
        assert gateway_in.attributes["mcp.session.id"] == client.attributes["mcp.session.id"]


def test_a_dead_collector_costs_one_warning_and_a_bounded_wait(tools_yaml: Path) -> None:
    port = free_port()  # nothing listens there
    r = mcp("tools", "call", str(tools_yaml), "trace", env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"})
    assert r.code == 0, r
    assert r.stdout.startswith('{"content":[{"type":"text","text":"00-')
    lines = r.stderr.splitlines()
    assert [line for line in lines if "warning" in line] == lines[:1], r.stderr
    assert not lines or lines[0].startswith("mcp: warning: OpenTelemetry: ")
