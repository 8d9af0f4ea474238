"""Which listen takes an untagged change notification, and a listen's final result given
back under the command's own id (the pure parts of the daemon's routing)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcli.daemon.routing import listens_for, retagged

SID = "io.modelcontextprotocol/subscriptionId"
WANTED = {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}


@pytest.mark.parametrize(
    ("method", "uri", "takes"),
    [
        ("notifications/tools/list_changed", None, True),
        ("notifications/prompts/list_changed", None, False),
        ("notifications/resources/list_changed", None, False),
        ("notifications/resources/updated", "file:///a", True),
        ("notifications/resources/updated", "file:///b", False),
    ],
)
def test_a_listen_takes_the_kinds_and_uris_it_asked_for(method: str, uri: Any, takes: bool) -> None:
    assert listens_for(WANTED, method, uri) is takes


def test_a_listen_that_asked_for_nothing_takes_nothing() -> None:
    assert not listens_for({}, "notifications/resources/updated", "file:///a")
    assert not listens_for({"resourceSubscriptions": "file:///a"}, "notifications/resources/updated", "file:///a")


def test_the_final_result_names_the_commands_listen() -> None:
    result = {"resultType": "complete", "_meta": {SID: 17, "other": 1}}
    assert retagged(result, 17, 2) == {"resultType": "complete", "_meta": {SID: 2, "other": 1}}
    assert retagged(result, 18, 2) is result  # not ours: left alone
    assert retagged({"resultType": "complete"}, 17, 2) == {"resultType": "complete"}
