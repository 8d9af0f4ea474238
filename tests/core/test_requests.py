"""A request's clock and shape, as both request engines keep them."""

from __future__ import annotations

import math

from mcpcli.core.requests import RequestClock, cancel_notice, cancels_on_giving_up, outgoing_request


def test_progress_restarts_the_timeout_but_never_past_the_hard_limit() -> None:
    clock = RequestClock.start(0.0, timeout=10.0, max_timeout=25.0)
    assert clock.remaining(0.0) == 10.0
    assert clock.progressed({"progress": 1}, 8.0) and clock.deadline == 18.0
    assert not clock.progressed({"progress": 1}, 9.0) and clock.deadline == 18.0  # not higher: no
    assert not clock.progressed({"progress": 0.5}, 9.0)
    assert clock.progressed({}, 20.0) and clock.deadline == 25.0  # no value counts; capped
    assert clock.remaining(20.0, paused=3.0) == 8.0  # time at a prompt does not count


def test_unbounded_clocks() -> None:
    assert RequestClock.start(5.0, None, None).remaining(1e9) == math.inf
    assert not RequestClock.start(5.0, None, None).bounded
    only_hard = RequestClock.start(0.0, None, 4.0)
    assert only_hard.bounded and only_hard.deadline == 4.0
    assert only_hard.progressed({"progress": 1}, 1.0) and only_hard.deadline == 4.0


def test_the_request_id_is_the_progress_token_unless_asked_otherwise() -> None:
    sent = outgoing_request("tools/call", {"name": "t", "_meta": {"k": 1}}, 7, progress_token=True)
    assert sent.params == {"name": "t", "_meta": {"k": 1, "progressToken": 7}} and sent.id == 7
    assert outgoing_request("ping", None, 8, progress_token=False).params is None


def test_initialize_is_never_cancelled() -> None:
    assert not cancels_on_giving_up("initialize") and cancels_on_giving_up("tools/call")
    notice = cancel_notice(3, "timed out")
    assert (notice.method, notice.params) == ("notifications/cancelled", {"requestId": 3, "reason": "timed out"})
