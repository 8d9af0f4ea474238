"""Which downstream caused an upstream's message (mcpcli/relay/routing.py): the rules in
their order, and each owner's own as parameters (the daemon's and the gateway's)."""

from __future__ import annotations

from collections.abc import Sequence

from mcpcli.relay.routing import NOBODY, Message, Nobody, Router

TASK_META = {"_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}}


class Down:
    """A downstream: a name, whether it has requests in flight, and whether it is open."""

    def __init__(self, name: str, *, busy: bool = True, open: bool = True) -> None:
        self.name, self.busy, self.open = name, busy, open

    def __repr__(self) -> str:
        return self.name


def router(downs: Sequence[Down], **kw: object) -> Router[Down]:
    def in_flight(message: Message) -> list[Down]:
        return [d for d in downs if d.busy and (d.open or not message.asking)]

    return Router(in_flight, **kw)  # type: ignore[arg-type]


def note(related: object = None, params: dict[str, object] | None = None, method: str = "notifications/progress",
         asking: bool = False) -> Message:
    return Message(method, params or {}, related, asking)  # type: ignore[arg-type]


def test_the_one_downstream_in_flight_takes_an_unattributed_message() -> None:
    a, b = Down("a"), Down("b", busy=False)
    assert router([a, b]).route(note()) is a
    assert router([a, Down("c")]).route(note()) is None  # never guessed among several
    assert router([b]).route(note()) is None


def test_the_request_that_carried_it_wins_while_it_is_registered() -> None:
    a, b = Down("a"), Down("b")
    routes = router([a, b])
    with routes.sent(7, b):
        assert routes.route(note(related=7)) is b
        assert routes.requests == {7: b}
    assert routes.requests == {}
    assert routes.route(note(related=7)) is None  # unknown now: as if untied (two busy)


def test_a_request_nobody_registered_is_the_one_unregistered_downstreams_or_nobodys() -> None:
    """The daemon: a request no attached command made is a `call` op's, when one runs."""
    a, sink, gone = Down("a"), Down("sink"), Down("gone")
    attached = {a}
    sinks: list[Down] = [sink]
    routes = router([a, sink], alive=attached.__contains__, unregistered=lambda: sinks)
    with routes.sent(1, a), routes.sent(2, gone):
        assert routes.route(note(related=1)) is a
        assert routes.route(note(related=2)) is sink  # its command left
        assert routes.route(note(related=3)) is sink
        sinks.append(Down("sink2"))
        assert routes.route(note(related=3)) is None  # not the in-flight rule: nobody's
    sinks.clear()
    assert router([a], unregistered=lambda: sinks).route(note(related=3)) is None


def test_a_message_tagged_with_a_task_goes_to_the_one_waiting_on_it() -> None:
    a, b = Down("a"), Down("b")
    routes = router([a, b])
    with routes.waiting("t1", b):
        assert routes.route(note(params=TASK_META)) is b
        with routes.waiting("t1", a):  # another waiter took it over
            pass
        assert routes.tasks == {}  # not put back: the later one removed its own
    assert routes.route(note(params=TASK_META)) is None


def test_the_current_downstream_comes_first() -> None:
    """The gateway: the call whose coroutine runs (a 2026-07-28 input round)."""
    a, b = Down("a"), Down("b")
    current: list[Down | None] = [b]
    routes = router([a, b], current=lambda: current[0])
    with routes.sent(1, a):
        assert routes.route(note(related=1)) is b
        current[0] = None
        assert routes.route(note(related=1)) is a


def test_an_owners_rules_run_before_the_in_flight_one_and_may_say_nobody() -> None:
    """The daemon's: a 2026-07-28 log message to the one command that asked for logs."""
    a, b = Down("a"), Down("b", busy=False)
    asked = [b]

    def logs(message: Message) -> Down | Nobody | None:
        if message.method != "notifications/message":
            return None
        return asked[0] if len(asked) == 1 else NOBODY

    routes = router([a, b], rules=(logs,))
    assert routes.route(note(method="notifications/message")) is b
    asked.append(a)
    assert routes.route(note(method="notifications/message")) is None
    assert routes.route(note()) is a  # not a log message: the rule has no opinion


def test_a_tie_may_pick_among_several_and_a_request_for_input_skips_ending_ones() -> None:
    """The gateway: several calls all from one stdio client: the latest; a request for
    input is never asked of a call that is ending."""
    a, b, ending = Down("a"), Down("b"), Down("ending", open=False)
    routes = router([a, b, ending], tie=lambda busy: busy[-1])
    assert routes.route(note()) is ending
    assert routes.route(note(method="elicitation/create", asking=True)) is b
    assert router([a, ending]).route(note(asking=True)) is a


def test_clear_forgets_everything_registered() -> None:
    a = Down("a")
    routes = router([])
    with routes.sent(1, a), routes.waiting("t1", a):
        routes.clear()
        assert routes.route(note(related=1)) is None
        assert routes.route(note(params=TASK_META)) is None
