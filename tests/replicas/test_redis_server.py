"""The test command's own Redis: found or installed by scripts/install-peers, started per test
module on a free loopback port with nothing written to disk, and reached through redis-py
(the `redis` extra) as the Redis task store reaches it."""

from __future__ import annotations

import pytest

from .conftest import RedisServer

pytestmark = pytest.mark.peer


@pytest.mark.anyio
async def test_redis_answers_and_keeps_nothing_on_disk(redis_server: RedisServer, redis_url: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis_url)
    try:
        assert await client.ping() is True
        config = await client.config_get("save")
        assert config["save"] == ""                      # no RDB snapshots
        assert (await client.config_get("appendonly"))["appendonly"] == "no"
        assert (await client.config_get("bind"))["bind"] == "127.0.0.1"
        await client.set("mcpcli:probe", "1")
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_each_test_starts_with_an_empty_redis(redis_url: str) -> None:
    """Tests share the module's server, not its keys: the previous test's probe is gone."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis_url)
    try:
        assert await client.dbsize() == 0
    finally:
        await client.aclose()
