"""W3C Trace Context as `mcpcli.core.tracecontext` reads and writes it (https://www.w3.org/TR/trace-context/)."""

from __future__ import annotations

import pytest

from mcpcli.core import tracecontext
from mcpcli.core.tracecontext import TraceContext, parse, parse_traceparent, parse_tracestate

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "00f067aa0ba902b7"
VALID = f"00-{TRACE}-{SPAN}-01"


def test_a_valid_traceparent() -> None:
    assert parse_traceparent(VALID) == (TRACE, SPAN, 1)
    assert parse_traceparent(f"00-{TRACE}-{SPAN}-00") == (TRACE, SPAN, 0)
    assert parse_traceparent(f" {VALID}\t") == (TRACE, SPAN, 1)  # optional whitespace, as in a header


@pytest.mark.parametrize("value", [
    "", "00", VALID[:-1], VALID + "0",
    VALID.upper(),  # lowercase hex only
    f"00-{'0' * 32}-{SPAN}-01",  # all-zero trace id
    f"00-{TRACE}-{'0' * 16}-01",  # all-zero parent id
    f"ff-{TRACE}-{SPAN}-01",  # version ff is invalid
    f"00-{TRACE}-{SPAN}-01-extra",  # version 00 has exactly four fields
    f"00_{TRACE}-{SPAN}-01", f"00-{TRACE}_{SPAN}-01", f"00-{TRACE}-{SPAN}_01",
    f"00-{TRACE[:-1]}g-{SPAN}-01", f"00-{TRACE}-{SPAN}-0x", f"0g-{TRACE}-{SPAN}-01",
    None, 42, ["00"],
])
def test_what_is_no_traceparent(value: object) -> None:
    assert parse_traceparent(value) is None
    assert parse(value, "a=b") is None  # a tracestate never stands alone


def test_a_later_version_is_read_as_far_as_00_goes_and_sent_as_00() -> None:
    assert parse_traceparent(f"01-{TRACE}-{SPAN}-01-more-fields") == (TRACE, SPAN, 1)
    assert parse_traceparent(f"01-{TRACE}-{SPAN}-01x") is None  # only a `-` may follow
    context = parse(f"cc-{TRACE}-{SPAN}-01-whatever")
    assert context is not None and context.traceparent == VALID


def test_tracestate() -> None:
    assert parse_tracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE") == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
    assert parse_tracestate(" a=1 ,, b=2 ") == "a=1,b=2"  # whitespace and empty members dropped
    assert parse_tracestate("tenant@system=v,1tenant@s-y/s=v") == "tenant@system=v,1tenant@s-y/s=v"
    assert parse_tracestate("a=x,") == "a=x"
    assert parse_tracestate("a=1 2 ") == "a=1 2"  # inner spaces are part of a value
    for bad in ("A=1", "1=2", "a", "a=", "a=1,a=2", "a=b=c", "a@=1", "a@B=1", "a=\u00e9", "a=\x7f", "",
                ",".join(f"k{i}=v" for i in range(33)), None, 7):
        assert parse_tracestate(bad) is None, bad
    long = ",".join(f"k{i}={'v' * 40}" for i in range(20))
    kept = parse_tracestate(long)
    assert kept is not None and len(kept) <= 512 and long.startswith(kept)  # members dropped from the end


def test_a_bad_tracestate_leaves_the_traceparent() -> None:
    context = parse(VALID, "NOT VALID")
    assert context == TraceContext(TRACE, SPAN, 1, None)


def test_a_child_is_in_the_same_trace_with_a_new_span() -> None:
    parent = TraceContext(TRACE, SPAN, 1, "a=1")
    child = parent.child()
    assert child.trace_id == TRACE and child.state == "a=1" and child.flags == 1
    assert child.span_id != SPAN and len(child.span_id) == 16 and parse_traceparent(child.traceparent)
    assert len({parent.child().span_id for _ in range(50)}) == 50


def test_meta_and_environment_entries() -> None:
    assert TraceContext(TRACE, SPAN).meta() == {"traceparent": VALID}
    assert TraceContext(TRACE, SPAN, 0, "a=1").meta() == {"traceparent": f"00-{TRACE}-{SPAN}-00", "tracestate": "a=1"}
    assert TraceContext(TRACE, SPAN, 1, "a=1").environ() == {"TRACEPARENT": VALID, "TRACESTATE": "a=1"}


def test_from_meta_ignores_what_is_malformed() -> None:
    assert tracecontext.from_meta({"traceparent": VALID, "tracestate": "a=1"}) == TraceContext(TRACE, SPAN, 1, "a=1")
    for meta in (None, [], "x", {}, {"tracestate": "a=1"}, {"traceparent": "garbage"}, {"traceparent": 5}):
        assert tracecontext.from_meta(meta) is None


def test_from_environ() -> None:
    assert tracecontext.from_environ({"TRACEPARENT": VALID, "TRACESTATE": "a=1"}) == TraceContext(TRACE, SPAN, 1, "a=1")
    assert tracecontext.from_environ({"TRACESTATE": "a=1"}) is None
    assert tracecontext.from_environ({"TRACEPARENT": ""}) is None
    assert tracecontext.from_environ({"TRACEPARENT": "nope"}) is None
