"""OpenTelemetry spans of MCP requests, when asked for: the `otel` extra installed and the
standard `OTEL_*` variables set.

A client request is a CLIENT span, a request a server handles a SERVER span (a
gateway makes both), named and described as the OpenTelemetry semantic conventions
for MCP say: `{mcp.method.name} {target}` (the tool or prompt name), with
`mcp.method.name`, `jsonrpc.request.id`, `mcp.protocol.version`, `mcp.session.id`,
`gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`, `network.transport`,
`error.type` and `rpc.response.status_code`. Spans go out over OTLP (http/protobuf,
as the OTEL_EXPORTER_OTLP_* variables say), or to stderr (`OTEL_TRACES_EXPORTER=console`).

Nothing of OpenTelemetry is imported until the first span, and only when a program
said it wants spans (`configure`, the CLI) and the environment asks for them
(`wanted`): start-up is unchanged otherwise. Tracing never breaks a call: a missing
extra or a bad setting is one warning, then no spans.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

from mcpcli.core.protocol import TOOLS_CALL
from mcpcli.core.tracecontext import TraceContext
from mcpcli.errors import MissingExtra, RequestTimeout, RPCError, optional_import

__all__ = [
    "FLUSH_BOUND",
    "Span",
    "configure",
    "disable",
    "request_attributes",
    "shutdown",
    "span",
    "span_name",
    "tracer",
    "use",
    "wanted",
]

#: Variables that ask for spans (unless `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true`).
ASKING = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
#: At exit, how long the spans still queued may take to reach the collector (then dropped).
FLUSH_BOUND = 3.0
#: The instrumentation scope's name.
SCOPE = "mcpcli"

#: `network.transport` (and `network.protocol.name`) of our transport names, both sides.
_NETWORK: dict[str, dict[str, str]] = {
    "stdio": {"network.transport": "pipe"},
    "streamable-http": {"network.transport": "tcp", "network.protocol.name": "http"},
    "http": {"network.transport": "tcp", "network.protocol.name": "http"},
    "sse": {"network.transport": "tcp", "network.protocol.name": "http"},
    "session": {"network.transport": "unix"},
}
#: Requests whose `params.uri` is `mcp.resource.uri`.
_URI_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})


def wanted(environ: Mapping[str, str] | None = None) -> str | None:
    """The variable that asks for spans, or None (nothing set, or spans turned off)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    for name in ASKING:
        if env.get(name, "").strip():
            return name
    return None


class _State:
    """This process's span set-up: asked for by `configure`, made on the first span."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.service: str | None = None
        self.warn: Callable[[str], None] = _stderr_warning
        #: Send each span as it ends (a stdio server, stopped soon after its client is done).
        self.promptly = False
        #: Whether the set-up was tried (then `tracer` is the answer, None: no spans).
        self.tried = False
        self.tracer: Any = None
        #: Ours to flush at exit (not a provider handed to `use`).
        self.provider: Any = None


def _stderr_warning(message: str) -> None:
    sys.stderr.write(f"mcpcli: warning: {message}\n")


_state = _State()


def configure(service: str, warn: Callable[[str], None], *, promptly: bool = False) -> None:
    """This program records spans when the environment asks: `service` is its default
    `service.name` (`OTEL_SERVICE_NAME` wins), `warn` says what stops it. Imports nothing.

    `promptly`: each span goes out (in the background) as it ends, not in batches every
    few seconds: a stdio server's client stops it 60 ms after its last answer, too soon
    for a batch (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE` still wins)."""
    _state.service = service
    _state.warn = warn
    _state.promptly = promptly


def use(provider: Any) -> None:
    """Record spans with this OpenTelemetry `TracerProvider`, whatever the environment
    (tests hand an SDK provider with an in-memory exporter; an embedding program its own)."""
    with _state.lock:
        _state.tracer = provider.get_tracer(SCOPE, _version())
        _state.tried = True
        _state.provider = None


def disable() -> None:
    """Forget the set-up: no spans until `configure` or `use` again (tests; the session
    daemon, which relays contexts and records nothing, never configures)."""
    with _state.lock:
        _state.service = None
        _state.tracer = None
        _state.tried = False
        _state.provider = None


def tracer() -> Any:
    """The tracer spans are made with, or None when this process records none."""
    if _state.tried:
        return _state.tracer
    if _state.service is None:
        return None
    with _state.lock:
        if not _state.tried:
            _state.tracer = _setup(_state.service, _state.warn, _state.promptly)
            _state.tried = True
    return _state.tracer


def _version() -> str:
    from mcpcli import __version__

    return __version__


def _setup(service: str, warn: Callable[[str], None], promptly: bool) -> Any:
    asking = wanted()
    if asking is None:
        return None
    try:
        sdk = optional_import("opentelemetry.sdk.trace", extra="otel", package="opentelemetry-sdk",
                              feature=f"{asking} (OpenTelemetry spans)")
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        batch = 1 if promptly and not os.environ.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") else None
        processors = [BatchSpanProcessor(exporter, max_export_batch_size=batch)
                      for exporter in _exporters(asking, warn)]
    except (MissingExtra, _Unsupported) as exc:
        warn(f"{exc}; no spans are sent")
        return None
    except Exception as exc:  # a broken install or a bad OTEL_* value: never the call's problem
        warn(f"OpenTelemetry spans are off: {type(exc).__name__}: {exc}")
        return None
    if not processors:
        return None
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create({"service.version": _version()})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": service}))
    provider = sdk.TracerProvider(resource=resource, shutdown_on_exit=False)
    for processor in processors:
        provider.add_span_processor(processor)
    _quiet_sdk_logs(warn)
    _state.provider = provider
    return provider.get_tracer(SCOPE, _version())


def _exporters(asking: str, warn: Callable[[str], None]) -> list[Any]:
    """The exporters `OTEL_TRACES_EXPORTER` names (default otlp): otlp and console."""
    names = [n.strip().lower() for n in os.environ.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    exporters = []
    for name in names or ["otlp"]:
        if name == "otlp":
            exporters.append(_otlp(asking))
        elif name == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            exporters.append(ConsoleSpanExporter(out=sys.stderr))  # stdout is data only
        elif name != "none":
            warn(f"OTEL_TRACES_EXPORTER={name} is not supported (otlp, console or none); it is ignored")
    return exporters


class _Unsupported(Exception):
    """An `OTEL_*` setting these spans cannot follow; the message says which and why."""


def _otlp(asking: str) -> Any:
    protocol = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip().lower()
    if protocol == "grpc":
        package = "opentelemetry-exporter-otlp-proto-grpc"
        try:
            grpc = optional_import("opentelemetry.exporter.otlp.proto.grpc.trace_exporter", extra="otel",
                                   feature="OTLP over gRPC")
        except MissingExtra:
            raise _Unsupported(f"OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the {package} package, which is not "
                               f"installed: pip install {package} (mcpcli[otel] brings http/protobuf)") from None
        return grpc.OTLPSpanExporter()
    if protocol != "http/protobuf":
        raise _Unsupported(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported (http/protobuf or grpc)")
    http = optional_import("opentelemetry.exporter.otlp.proto.http.trace_exporter", extra="otel",
                           package="opentelemetry-exporter-otlp-proto-http",
                           feature=f"{asking} (OpenTelemetry spans)")
    return http.OTLPSpanExporter()


def _quiet_sdk_logs(warn: Callable[[str], None]) -> None:
    """The SDK's own complaints (a collector that does not answer) become one warning of
    ours, once, instead of a log line per batch and retry."""
    import logging

    class _Once(logging.Handler):
        said = False

        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING and not self.said:
                self.said = True
                warn(f"OpenTelemetry: {record.getMessage()}")

    logger = logging.getLogger("opentelemetry")
    logger.addHandler(_Once())
    logger.propagate = False


def shutdown(bound: float = FLUSH_BOUND) -> None:
    """Send the spans still queued, waiting at most `bound` seconds (a collector that does
    not answer costs a command no more at exit)."""
    with _state.lock:
        provider = _state.provider
        if provider is None:
            return  # none, or not ours (`use`)
        _state.provider = _state.tracer = None
    flush = threading.Thread(target=provider.shutdown, name="mcpcli-spans", daemon=True)
    flush.start()
    flush.join(bound)


# -- one span ------------------------------------------------------------------------------


def span_name(method: str, params: Mapping[str, Any]) -> str:
    """`{mcp.method.name} {target}`: the tool or prompt a request names, else the method."""
    if method in (TOOLS_CALL, "prompts/get"):
        name = params.get("name")
        if isinstance(name, str) and name:
            return f"{method} {name}"
    return method


def request_attributes(method: str, params: Mapping[str, Any], *, request_id: Any = None,
                       version: str | None = None, transport: str | None = None,
                       session_id: str | None = None) -> dict[str, Any]:
    """A request's attributes in the semantic conventions for MCP."""
    attributes: dict[str, Any] = {"mcp.method.name": method}
    if request_id is not None:
        attributes["jsonrpc.request.id"] = str(request_id)
    if version:
        attributes["mcp.protocol.version"] = version
    if session_id:
        attributes["mcp.session.id"] = session_id
    if transport is not None:
        attributes.update(_NETWORK.get(transport, {}))
    name = params.get("name")
    if method == TOOLS_CALL and isinstance(name, str):
        attributes["gen_ai.tool.name"] = name
        attributes["gen_ai.operation.name"] = "execute_tool"
    elif method == "prompts/get" and isinstance(name, str):
        attributes["gen_ai.prompt.name"] = name
    elif method in _URI_METHODS and isinstance(params.get("uri"), str):
        attributes["mcp.resource.uri"] = params["uri"]
    return attributes


class Span:
    """A span in flight: the context requests made for it carry, and its outcome."""

    __slots__ = ("_span", "context")

    def __init__(self, span: Any, context: TraceContext) -> None:
        self._span = span
        #: This span's own context (what goes into `_meta`, a script's environment).
        self.context = context

    def result(self, result: Mapping[str, Any]) -> None:
        """A result: a tool's `isError` is an error (`tool_error`), as the conventions say."""
        if result.get("isError") is True:
            self._error("tool_error", None)

    def fail(self, exc: BaseException) -> None:
        if isinstance(exc, RPCError):
            self._span.set_attribute("rpc.response.status_code", str(exc.code))
            self._error(str(exc.code), exc.rpc_message)
        elif isinstance(exc, (RequestTimeout, TimeoutError)):
            self._error("timeout", str(exc))
        elif not isinstance(exc, Exception):
            self._error("cancelled", None)  # a cancellation, Ctrl-C
        else:
            kind = type(exc)
            self._error(f"{kind.__module__}.{kind.__qualname__}", str(exc))

    def _error(self, kind: str, message: str | None) -> None:
        from opentelemetry.trace import Status, StatusCode

        self._span.set_attribute("error.type", kind)
        self._span.set_status(Status(StatusCode.ERROR, message))


def _parent(parent: TraceContext | None) -> Any:
    """An OpenTelemetry context whose span is `parent` (None: the ambient one)."""
    if parent is None:
        return None
    from opentelemetry import trace

    state = trace.TraceState.from_header([parent.state]) if parent.state else None
    context = trace.SpanContext(int(parent.trace_id, 16), int(parent.span_id, 16), is_remote=not parent.local,
                                trace_flags=trace.TraceFlags(parent.flags), trace_state=state)
    return trace.set_span_in_context(trace.NonRecordingSpan(context))


def _own(span: Any) -> TraceContext:
    context = span.get_span_context()
    state = context.trace_state.to_header() if context.trace_state else ""
    return TraceContext(format(context.trace_id, "032x"), format(context.span_id, "016x"),
                        int(context.trace_flags), state or None, local=True)


@contextmanager
def span(kind: Literal["client", "server"], method: str, params: Mapping[str, Any], *,
         parent: TraceContext | None, attributes: Mapping[str, Any]) -> Iterator[Span]:
    """A CLIENT or SERVER span of one request, a child of `parent`, ended when the block
    is; an exception leaving the block is its error. Only when `tracer()` is not None."""
    from opentelemetry.trace import SpanKind

    made = tracer().start_span(
        span_name(method, params), context=_parent(parent),
        kind=SpanKind.CLIENT if kind == "client" else SpanKind.SERVER,
        attributes=dict(attributes), record_exception=False, set_status_on_exception=False,
    )
    handle = Span(made, _own(made))
    try:
        yield handle
    except BaseException as exc:
        handle.fail(exc)
        raise
    finally:
        made.end()

