"""What an upstream listed, kept until it says it changed (mcpcli/relay/listings.py): by
key and page, until the matching list_changed (or the entry's expiry), with what was
known before kept, and a fetch begun before a change not kept."""

from __future__ import annotations

import anyio
import pytest

from mcpcli.relay.listings import STALE_BY_METHOD, Listings

KINDS = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/resources/list_changed": ("resources", "templates"),
}


def test_a_listing_is_kept_until_its_list_changed() -> None:
    listings: Listings[list[str]] = Listings(KINDS)
    listings.put("tools", ["a"])
    listings.put("resources", ["r"])
    listings.put("templates", ["t"])
    assert listings.get("tools") == ["a"]
    assert listings.changed("notifications/prompts/list_changed") == ()
    assert listings.changed("notifications/resources/list_changed") == ("resources", "templates")
    assert (listings.get("resources"), listings.get("templates"), listings.get("tools")) == (None, None, ["a"])
    assert listings.previous == {"resources": ["r"], "templates": ["t"]}
    listings.forget("tools")
    listings.forget("tools")  # a second change before a new listing keeps the last known
    assert listings.previous["tools"] == ["a"]


def test_pages_expire_and_go_with_their_method() -> None:
    """The daemon: a modern session's list results by cursor, while their ttlMs lasts."""
    listings: Listings[dict[str, int]] = Listings(STALE_BY_METHOD)
    listings.put("tools/list", {"page": 1}, "null", expires=100.0)
    listings.put("tools/list", {"page": 2}, '"c2"', expires=100.0)
    listings.put("resources/templates/list", {"page": 1}, "null", expires=100.0)
    assert listings.get("tools/list", "null", now=99.0) == {"page": 1}
    assert listings.get("tools/list", "null", now=100.0) is None  # expired
    listings.changed("notifications/tools/list_changed")
    assert listings.get("tools/list", '"c2"', now=0.0) is None
    assert listings.get("resources/templates/list", "null", now=0.0) == {"page": 1}
    assert listings.changed("notifications/resources/list_changed") == ("resources/list", "resources/templates/list")
    assert listings.get("resources/templates/list", "null", now=0.0) is None
    assert listings.previous == {}  # only a whole listing (no page) is kept as the previous one


@pytest.mark.anyio
async def test_a_fetch_begun_before_a_change_is_shared_but_not_kept() -> None:
    listings: Listings[list[str]] = Listings(KINDS)
    gate = anyio.Event()
    fetched: list[int] = []

    async def fetch(generation: int) -> list[str]:
        fetched.append(generation)
        await gate.wait()
        listings.put("tools", ["old"], generation=generation)
        return ["old"]

    got: list[list[str]] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _get(listings, fetch, got))
            tg.start_soon(lambda: _get(listings, fetch, got))
            await anyio.wait_all_tasks_blocked()
            listings.changed("notifications/tools/list_changed")
            gate.set()
    assert fetched == [0] and got == [["old"], ["old"]]  # one fetch in flight, both share it
    assert listings.get("tools") is None  # begun before the change: not kept
    assert listings.put("tools", ["new"], generation=1) and listings.get("tools") == ["new"]


async def _get(listings: Listings[list[str]], fetch: object, got: list[list[str]]) -> None:
    got.append(await listings.fetch("tools", fetch))  # type: ignore[arg-type]
