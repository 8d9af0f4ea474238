"""When spans are recorded, and what happens when they cannot be: tracing never breaks a
call (one warning naming what is missing), and a collector never holds a command long."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import pytest
from helpers import fake_server, mcp_in

from mcpcli import spans


@pytest.mark.parametrize(("env", "asking"), [
    ({}, None),
    ({"OTEL_SERVICE_NAME": "x"}, None),  # naming a service asks for nothing
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    ({"OTEL_TRACES_EXPORTER": "console"}, "OTEL_TRACES_EXPORTER"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "false"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
])
def test_which_variables_ask_for_spans(env: dict[str, str], asking: str | None) -> None:
    assert spans.wanted(env) == asking


def test_nothing_is_recorded_unless_a_program_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert spans.tracer() is None  # a library user (or the daemon) that never called configure


CALL = ("tools", "call", "echo", "--arg", "message=hi", "--")


def test_the_extra_missing_is_one_warning_and_the_call_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if not installed
    r = mcp_in(*CALL, *fake_server("--modern"), env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert r.code == 0, r
    assert r.json["content"] == [{"type": "text", "text": "hi"}]
    assert r.stderr == (
        "mcp: warning: OTEL_EXPORTER_OTLP_ENDPOINT (OpenTelemetry spans) needs the opentelemetry-sdk package, "
        "which is not installed: pip install 'mcpcli[otel]'; no spans are sent\n")


@pytest.mark.parametrize(("env", "warning"), [
    ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
     "mcp: warning: OTEL_EXPORTER_OTLP_PROTOCOL=http/json is not supported (http/protobuf or grpc); "
     "no spans are sent\n"),
    ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
     "mcp: warning: OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the opentelemetry-exporter-otlp-proto-grpc package, "
     "which is not installed: pip install opentelemetry-exporter-otlp-proto-grpc (mcpcli[otel] brings "
     "http/protobuf); no spans are sent\n"),
])
def test_a_setting_that_cannot_be_followed_is_one_warning(env: dict[str, str], warning: str) -> None:
    if "grpc" in warning:
        try:
            import opentelemetry.exporter.otlp.proto.grpc  # noqa: F401
        except ImportError:
            pass
        else:
            pytest.skip("the gRPC exporter is installed here")
    r = mcp_in(*CALL, *fake_server(), env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", **env})
    assert r.code == 0, r
    assert r.stderr == warning


def test_console_spans_go_to_stderr_and_stdout_stays_data() -> None:
    r = mcp_in(*CALL, *fake_server("--modern"), env={"OTEL_TRACES_EXPORTER": "console,zipkin"})
    assert r.code == 0, r
    assert json.loads(r.stdout)["content"] == [{"type": "text", "text": "hi"}]
    assert r.stderr.startswith(
        "mcp: warning: OTEL_TRACES_EXPORTER=zipkin is not supported (otlp, console or none); it is ignored\n")
    assert '"name": "tools/call echo"' in r.stderr and '"kind": "SpanKind.CLIENT"' in r.stderr
    assert '"service.name": "mcpcli"' in r.stderr


def test_otel_service_name_wins() -> None:
    r = mcp_in(*CALL, *fake_server(), env={"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "ci-job"})
    assert r.code == 0, r
    assert '"service.name": "ci-job"' in r.stderr and '"service.name": "mcpcli"' not in r.stderr


def test_the_flush_at_exit_is_bounded() -> None:
    """A collector that does not answer: the command waits `bound` at most, then leaves."""
    release = threading.Event()
    flushed = threading.Event()

    class Stuck:
        def shutdown(self) -> None:
            release.wait(30)
            flushed.set()

    spans._state.provider = Stuck()
    spans._state.tried = True
    spans.shutdown(bound=0.01)
    assert not flushed.is_set() and spans._state.provider is None
    release.set()
    assert flushed.wait(30)
    spans.shutdown(bound=0.01)  # nothing left: at once


def test_a_provider_handed_in_is_not_ours_to_shut_down() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    provider: Any = TracerProvider()
    spans.use(provider)
    spans.shutdown()
    assert spans.tracer() is not None  # still recording into it
    provider.shutdown()
