"""Calling the backend, and the 2026-07-28 multi-round-trip requests (MRTR).

`call_backend` runs one tools/call, prompts/get or resources/read in the request's era.
A legacy call runs in the handler task and asks the client with server to client
requests. A 2026 call runs as a `calls.Continuation`: when the backend asks for input
the request is answered with an `InputRequiredResult` whose signed `requestState`
names the parked call; the client's retry (with the same request, its
`inputResponses` and that state) resumes it. A retry whose call is gone (evicted,
or served by another process) re-runs the backend with the answers carried in the
state; past `input_ttl` the state itself has expired and the client must call again.

Where the call runs: on a connection that outlives its requests (stdio, in memory)
its first round runs in the request's own task, so a call that needs no input costs
no task or hand-over of its own; if it asks, the request is answered early and the
task, handed over to the server's own tasks, stays parked as the call. Elsewhere
(stateless HTTP, whose connection ends with the request) and for a tools/call that
may become a task it runs in a task of the server's from the start.

A tools/call that may become a task (`mcpcli.server.tasks.store.Escalation`) waits
for its round only `after` seconds; a call still working then is adopted by a
task and the request is answered with the task's `CreateTaskResult`.

The parked calls, the signer and the tasks are the `Runtime`'s.
"""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Any

import anyio

from mcpcli.core.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from mcpcli.core.protocol import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcpcli.errors import RPCError
from mcpcli.server._state import Runtime, request_digest
from mcpcli.server.backend import InputDeclined
from mcpcli.server.calls import Call, Continuation, IncomingRequest, Invoke
from mcpcli.server.meta import ModernError

if TYPE_CHECKING:
    from mcpcli.server.tasks.store import Escalation

__all__ = ["call_backend", "declined", "input_responses"]

JSON = dict[str, Any]

#: Bound on the accumulated answers carried inside a requestState.
_MAX_STATE_ANSWERS = 256 * 1024


async def call_backend(
    runtime: Runtime, rq: IncomingRequest, invoke: Invoke, escalation: Escalation | None = None
) -> JSON:
    """Run a backend call in the request's era; `InputDeclined` becomes that era's error.

    With an `escalation` (2026 only), a call that outlasts it becomes a task."""
    if rq.era == "legacy":
        try:
            return await invoke(Call(rq))
        except InputDeclined as exc:
            raise declined(rq, exc) from None
    try:
        return await _run_round(runtime, rq, invoke, escalation)
    except InputDeclined as exc:
        raise declined(rq, exc) from None


def declined(rq: IncomingRequest, exc: InputDeclined) -> RPCError:
    """The error a call the client cannot answer ends with, in the request's era."""
    if rq.era == "legacy":
        return RPCError(INVALID_REQUEST, f"the client cannot answer: {exc}")
    return ModernError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {', '.join(exc.capabilities) or exc}",
        {"requiredCapabilities": {cap: {} for cap in exc.capabilities}},
    )


async def _run_round(
    runtime: Runtime, rq: IncomingRequest, invoke: Invoke, escalation: Escalation | None
) -> JSON:
    """One MRTR round: start or resume the call, then its result or the input it needs
    (or, with an escalation, the task it became)."""
    params = rq.params
    responses = input_responses(params)
    digest: str | None = None  # computed only when a round trip is involved
    answers: JSON = {}
    cont: Continuation | None = None
    if "requestState" in params:
        digest = request_digest(rq.method, params)
        cont = _open_state(runtime, rq, digest, answers)
    answers.update(responses)
    if cont is not None:
        cont.call.rebind(rq)
        cont.call.answers.update(responses)
        cont.resume()
    else:
        call = Call(rq)
        call.answers = answers
        cont = Continuation(call)
        if escalation is None and rq.answer_now is not None:
            return await _run_inline(runtime, rq, cont, invoke)
        cont.start(runtime.call_tasks(), invoke)
    outcome = None
    if escalation is not None:
        if escalation.after > 0:
            outcome = await cont.next_round(escalation.after)
        if outcome is None:
            created = escalation.adopt(cont, rq)
            if created is not None:
                return created
    if outcome is None:
        outcome = await cont.next_round()
    assert outcome is not None
    if outcome[0] == "input":
        return _input_required(runtime, rq, cont, outcome[1], digest)
    return _finished(outcome)


def _finished(outcome: tuple[str, Any]) -> JSON:
    """A call's final outcome as the request's answer: its result, or its error raised."""
    kind, value = outcome
    if kind == "done":
        result: JSON = value
        return result
    if kind == "error":
        raise value
    raise RPCError(INTERNAL_ERROR, "the call was cancelled")


def _input_required(
    runtime: Runtime, rq: IncomingRequest, cont: Continuation, missing: JSON, digest: str | None
) -> JSON:
    """Park `cont` for the client's retry: the InputRequiredResult asking for `missing`."""
    if digest is None:
        digest = request_digest(rq.method, rq.params)
    return {
        "resultType": "input_required",
        "inputRequests": missing,
        "requestState": _park(runtime, cont, digest, rq.principal),
    }


async def _run_inline(runtime: Runtime, rq: IncomingRequest, cont: Continuation, invoke: Invoke) -> JSON:
    """A first round in the request's own task (a connection that outlives its requests:
    stdio, in memory). Most calls just finish, with no task or hand-over of their own;
    one that asks for input answers the request early and stays parked in this task."""
    answer_now = rq.answer_now
    assert answer_now is not None

    async def answer_early(missing: dict[str, JSON]) -> None:
        await answer_now(_input_required(runtime, rq, cont, missing, None))

    outcome = await cont.run_inline(invoke, answer_early)
    if outcome is None:
        return {}  # answered already; the parked call's outcomes go to the retries
    return _finished(outcome)


def input_responses(params: JSON) -> JSON:
    """The request's `inputResponses` (-32602 unless an object of result objects)."""
    responses: JSON = {}
    if "inputResponses" in params:
        given = params["inputResponses"]
        if not isinstance(given, dict):
            raise RPCError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
        for key, value in given.items():
            if not isinstance(value, dict):
                raise RPCError(
                    INVALID_PARAMS,
                    f"Invalid params: inputResponses[{key!r}] must be a result object",
                )
        responses = given
    return responses


def _open_state(
    runtime: Runtime, rq: IncomingRequest, digest: str, answers: JSON
) -> Continuation | None:
    """Verify the request's `requestState`, add its answers to `answers`, and find
    the parked call it names (None when that call is gone)."""
    state = runtime.signer.open_request_state(
        rq.params["requestState"], digest=digest, principal=rq.principal
    )
    answers.update(state["a"])
    cont: Continuation | None = None
    cid = state.get("c")
    if isinstance(cid, str):
        cont = runtime.parked.pop(cid, None)
    if cont is not None and cont.dead:
        cont = None
    return cont


def _park(runtime: Runtime, cont: Continuation, digest: str, principal: str) -> str:
    """Keep a call waiting for input (evicting the oldest beyond `max_parked`);
    the signed requestState that resumes it."""
    cid = secrets.token_urlsafe(12)
    parked = runtime.parked
    while len(parked) >= runtime.max_parked:
        _, oldest = parked.popitem(last=False)
        oldest.scope.cancel()
    cont.park(parked, cid)
    cont.scope.deadline = anyio.current_time() + runtime.input_ttl
    answers = cont.call.answers
    if len(json.dumps(answers, default=str)) > _MAX_STATE_ANSWERS:
        answers = {}  # a re-run would ask again; the parked call has them anyway
    return runtime.signer.request_state(
        continuation=cid, digest=digest, principal=principal, ttl=runtime.input_ttl, answers=answers
    )
