"""A minimal OTLP/HTTP trace receiver for the tests (a collector stand-in on loopback):
POST /v1/traces with protobuf bodies, decoded with the OpenTelemetry protobuf definitions."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    """One exported span, as the receiver decoded it."""

    service: str
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    status: int
    status_message: str


@dataclass
class Receiver:
    endpoint: str
    spans: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def named(self, name: str) -> list[Received]:
        with self.lock:
            return [s for s in self.spans if s.name == name]


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def _decode(body: bytes) -> list[Received]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    found = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(Received(
                    service=str(resource.get("service.name")), name=span.name,
                    kind=Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
                    trace_id=span.trace_id.hex(), span_id=span.span_id.hex(), parent_id=span.parent_span_id.hex(),
                    attributes={a.key: _value(a.value) for a in span.attributes},
                    status=span.status.code, status_message=span.status.message,
                ))
    return found


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """A receiver on a free loopback port; `endpoint` is what OTEL_EXPORTER_OTLP_ENDPOINT takes."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/v1/traces":
                decoded = _decode(body)
                with receiver.lock:
                    receiver.spans.extend(decoded)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
