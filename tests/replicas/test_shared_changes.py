"""`SharedChanges`: a change replicas both see (one file system) reaches a listener once; a
second real change from the same replica is never dropped."""

from __future__ import annotations

from mcpcli.server.subscriptions import UPDATED, SharedChanges

URI = {"uri": "mem://state"}


def test_the_same_update_from_the_other_origin_is_dropped_within_the_window() -> None:
    shared = SharedChanges(window=60)
    assert shared.local(UPDATED, URI) is True
    assert shared.remote(UPDATED, URI) is False          # B relayed what A saw itself
    assert shared.remote(UPDATED, {"uri": "mem://other"}) is True


def test_repeats_from_one_origin_always_pass() -> None:
    shared = SharedChanges(window=60)
    assert shared.remote(UPDATED, URI) is True
    assert shared.remote(UPDATED, URI) is True           # a second change relayed: kept
    assert shared.local(UPDATED, URI) is False           # our own sighting of the relayed one
    assert shared.local(UPDATED, URI) is False


def test_after_the_window_the_other_origin_passes_again() -> None:
    shared = SharedChanges(window=0)
    assert shared.local(UPDATED, URI) is True
    assert shared.remote(UPDATED, URI) is True
