"""Protocol flows: what the core asks its drivers to do, and the one way to run a flow.

A flow is a generator that decides everything about an exchange with the server
(which requests, in what order, with which `_meta`, how to read each answer) and
does no I/O: it yields an operation, its driver performs it and sends back the
result, or throws in the typed error the operation ended with. The anyio `Client`
and the synchronous one-shot client drive the same flows (the pattern of httpx's
`auth_flow` generators), so the two cannot drift.

    Send    one JSON-RPC request; the driver returns its result (or throws its error)
    Notify  one notification; the driver returns None
    Answer  the requests of one 2026-07-28 input round (or a task's), each `(key,
            method, params)`, to be answered with the client's features; the driver
            returns `{key: answer}` (or throws an `RPCError` the server gets as an error)
    ListTools  the tool listing, as the driver keeps it (its cache, the transport's
            filter); the driver returns it
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from mcpcli.core.plain import Plain

__all__ = ["Answer", "Flow", "ListTools", "Notify", "Op", "Send", "run_async", "run_sync"]

JSON = dict[str, Any]
T = TypeVar("T")


class Send(Plain):
    """Send one request and wait for its result.

    `timeout` and `max_timeout` are seconds, None for no bound, True for the driver's
    default; `progress_token` asks the driver to put the request's id in `_meta`
    (progress resets `timeout`, never past `max_timeout`). `probe` marks the era probe:
    what a stdio server says on stderr is held until it is answered (a server that dies of
    it is started again, and that start's words are dropped).
    """

    __slots__ = (
        "cancel_on_timeout",
        "max_timeout",
        "method",
        "on_progress",
        "params",
        "probe",
        "progress_token",
        "timeout",
    )

    def __init__(
        self,
        method: str,
        params: JSON | None = None,
        timeout: float | bool | None = True,
        max_timeout: float | bool | None = True,
        progress_token: bool = True,
        cancel_on_timeout: bool = True,
        on_progress: Callable[[JSON], None] | None = None,
        probe: bool = False,
    ) -> None:
        self.method = method
        self.params = params
        self.timeout = timeout
        self.max_timeout = max_timeout
        self.progress_token = progress_token
        self.cancel_on_timeout = cancel_on_timeout
        self.on_progress = on_progress
        self.probe = probe


class Notify(Plain):
    __slots__ = ("method", "params")

    def __init__(self, method: str, params: JSON | None = None) -> None:
        self.method = method
        self.params = params


class Answer(Plain):
    __slots__ = ("requests",)

    def __init__(self, requests: tuple[tuple[str, str, JSON], ...]) -> None:
        self.requests = requests


class ListTools(Plain):
    __slots__ = ()


Op = Send | Notify | Answer | ListTools
Flow = Generator[Op, Any, T]


def run_sync(flow: Flow[T], perform: Callable[[Op], Any]) -> T:
    """Drive `flow` to its end with a blocking `perform`; what the flow returns.

    An `Exception` from `perform` is thrown into the flow, which may handle it; a
    `BaseException` (KeyboardInterrupt) closes the flow and propagates.
    """
    value: Any = None
    error: Exception | None = None
    try:
        while True:
            try:
                op = flow.send(value) if error is None else flow.throw(error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            value, error = None, None
            try:
                value = perform(op)
            except Exception as exc:
                error = exc
    finally:
        flow.close()


async def run_async(flow: Flow[T], perform: Callable[[Op], Awaitable[Any]]) -> T:
    """`run_sync` for an awaitable `perform` (the anyio client); cancellation closes the flow."""
    value: Any = None
    error: Exception | None = None
    try:
        while True:
            try:
                op = flow.send(value) if error is None else flow.throw(error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            value, error = None, None
            try:
                value = await perform(op)
            except Exception as exc:
                error = exc
    finally:
        flow.close()
