"""Task records in Redis: any number of `mcp serve --http` replicas as one server.

`RedisRecords` implements `records.TaskRecords` on redis-py (imported here only,
so only `--task-store redis://...` pays for it). The seam is synchronous, so the
calls are plain redis-py round trips (one pipeline each, on loopback or a LAN:
well under a millisecond); two daemon threads do what must not wait for a request:

- the listener takes pub/sub messages from the other replicas (record changes,
  cancellations and input for the tasks this process runs) and hands them to
  the event loop that registered the callbacks;
- the heartbeat renews this process's lease and, once per lease, fails the
  unfinished tasks of replicas whose lease ran out (`recover`), so a client
  polling a task of a dead replica gets an answer instead of `working` forever.

Keys live under `mcpcli:tasks:<namespace>:` (the namespace is a hash of the
served file's path, or `?namespace=` in the URL), and each task's key expires
with the task's ttl. Records hold `principal_key()` hashes, never credentials.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mcpcli.errors import UsageError, optional_import
from mcpcli.jobs import running_asyncio_loop
from mcpcli.server.tasks.records import PROCESS_ID, Delivery, TaskRecord

__all__ = ["REDIS_URL_ENV", "RedisRecords", "namespace_for", "redis_url"]

log = logging.getLogger(__name__)

#: Where the Redis URL with credentials comes from (argv is visible to every local user).
REDIS_URL_ENV = "MCP_SERVE_REDIS_URL"

#: The status message of a task whose replica stopped renewing its lease.
REPLICA_GONE = "the replica running this task stopped (its lease of {seconds:g} s ran out)"

JSON = dict[str, Any]


def redis_url(value: str, environ: Mapping[str, str] | None = None) -> str:
    """The Redis URL `--task-store VALUE` means: `redis` alone takes it from
    MCP_SERVE_REDIS_URL; a URL on the command line must not carry a password."""
    env = os.environ if environ is None else environ
    if value in ("redis", "rediss"):
        url = env.get(REDIS_URL_ENV, "")
        if not url:
            raise UsageError(f"--task-store {value}: {REDIS_URL_ENV} is not set",
                             hint=f"{REDIS_URL_ENV}=redis://[:PASSWORD@]HOST:PORT/DB")
        value = url
    else:
        parts = urlsplit(value)
        if parts.password is not None:
            raise UsageError(
                "--task-store: a Redis password on the command line is visible to every local user",
                hint=f"put the URL in {REDIS_URL_ENV} and pass --task-store redis",
            )
    parts = urlsplit(value)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise UsageError(f"{REDIS_URL_ENV}: expected redis://HOST:PORT/DB or rediss://HOST:PORT/DB")
    return value


def namespace_for(file: str | os.PathLike[str]) -> str:
    """The default key namespace of a served file: replicas of one file share tasks, other
    files served through the same Redis do not (replicas must serve it at the same path,
    or name a namespace with `?namespace=` in the URL)."""
    path = os.path.abspath(os.fspath(file))
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class RedisRecords:
    """`TaskRecords` shared through one Redis database; see the module docstring."""

    durable = True

    def __init__(self, url: str, namespace: str, *, lease: float = 10.0, process: str = PROCESS_ID) -> None:
        redis = optional_import("redis", extra="redis", feature="--task-store redis")

        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        namespace = query.pop("namespace", namespace)
        if "lease" in query:  # seconds; how long a dead replica's tasks stay `working`
            try:
                lease = float(query.pop("lease"))
            except ValueError:
                lease = -1
            if not 0.5 <= lease <= 3600:
                raise UsageError("task store URL: lease= expects seconds between 0.5 and 3600")
        url = urlunsplit(parts._replace(query=urlencode(query)))
        self.lease = lease
        self.process = process
        self._prefix = f"mcpcli:tasks:{namespace}:"
        self._events = self._prefix + "events"
        # Any: redis-py's annotations cover its sync and async clients in one union.
        self._redis: Any = redis.Redis.from_url(url, decode_responses=True, socket_timeout=10,
                                           socket_connect_timeout=10, health_check_interval=30)
        try:
            self._redis.ping()
        except redis.RedisError as exc:
            from mcpcli.errors import TransportError

            raise TransportError(f"task store {_safe(url)}: {exc}") from exc
        self._on_change: Callable[[TaskRecord], None] | None = None
        self._on_notification: Callable[[str, JSON], None] | None = None
        self._cancel: Delivery | None = None
        self._answer: Delivery | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._renew()
        self._redis.sadd(self._key("replicas"), process)
        self._put: Any = self._redis.register_script(_PUT)
        self._pubsub: Any = self._redis.pubsub(ignore_subscribe_messages=True)
        self._pubsub.subscribe(self._events)
        self._threads = [
            threading.Thread(target=self._listen, name="mcpcli-redis-listen", daemon=True),
            threading.Thread(target=self._heartbeat, name="mcpcli-redis-lease", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- keys -----------------------------------------------------------------------

    def _key(self, *parts: str) -> str:
        return self._prefix + ":".join(parts)

    def _renew(self) -> None:
        self._redis.set(self._key("lease", self.process), "1", px=int(self.lease * 1000))

    # -- TaskRecords ----------------------------------------------------------------

    def put(self, record: TaskRecord) -> None:
        """Write the record, its indexes and the change message in one step (a Lua script),
        unless the stored record is already finished: a replica whose lease ran out while it
        still ran the task (Redis away, a long pause) cannot turn `failed` back into
        `completed` after a survivor settled it."""
        if self._loop is None:
            self._capture_loop()
        data = json.dumps(record.to_json(), separators=(",", ":"))
        keys = [self._key("task", record.id), self._key("expiry"), self._key("all"),
                self._key("principal", record.principal), self._key("running", record.owner), self._events,
                self._key("principals")]
        expires = "" if record.expires is None else str(max(1, int(record.expires * 1000)))
        # The record's JSON is in the message as it is stored (not serialized again).
        message = '{"kind":"change","from":' + json.dumps(self.process) + ',"record":' + data + "}"
        self._put(keys=keys, args=[data, record.id, expires, repr(record.expires or 0), repr(record.created),
                                   "1" if record.terminal else "", message, record.principal])

    def get(self, task_id: str, now: float) -> TaskRecord | None:
        raw = self._redis.get(self._key("task", task_id))
        if raw is None:
            return None
        record = TaskRecord.from_json(json.loads(raw))
        if record.expires is not None and record.expires <= now:
            return None
        return record

    def delete(self, task_id: str) -> None:
        record = self.get(task_id, 0.0)
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(self._key("task", task_id))
        pipe.zrem(self._key("all"), task_id)
        pipe.zrem(self._key("expiry"), task_id)
        pipe.hdel(self._key("principals"), task_id)
        if record is not None:
            pipe.zrem(self._key("principal", record.principal), task_id)
            pipe.srem(self._key("running", record.owner), task_id)
        pipe.execute()

    def _load(self, ids: list[str], now: float) -> list[TaskRecord]:
        if not ids:
            return []
        raws = self._redis.mget([self._key("task", i) for i in ids])
        records = [TaskRecord.from_json(json.loads(raw)) for raw in raws if raw is not None]
        return [r for r in records if r.expires is None or r.expires > now]

    def by_principal(self, principal: str, now: float) -> list[TaskRecord]:
        return self._load(list(self._redis.zrange(self._key("principal", principal), 0, -1)), now)

    def count(self, principal: str | None = None) -> int:
        key = self._key("all") if principal is None else self._key("principal", principal)
        return int(self._redis.zcard(key))

    def expire(self, now: float) -> list[str]:
        ids = list(self._redis.zrangebyscore(self._key("expiry"), "-inf", now))
        gone = []
        for task_id in ids:
            # One replica wins each id (ZREM says who), so each expiry is reported once.
            if self._redis.zrem(self._key("expiry"), task_id):
                self._forget(task_id)
                gone.append(task_id)
        return gone

    def _forget(self, task_id: str) -> None:
        """Drop the index entries of a task whose key Redis already expired (its principal
        comes from the `principals` hash: the record itself is gone)."""
        principal = self._redis.hget(self._key("principals"), task_id)
        pipe = self._redis.pipeline(transaction=False)
        pipe.zrem(self._key("all"), task_id)
        pipe.delete(self._key("task", task_id))
        pipe.hdel(self._key("principals"), task_id)
        if principal is not None:
            pipe.zrem(self._key("principal", principal), task_id)
        pipe.execute()

    def evict_finished(self, principal: str | None = None) -> bool:
        key = self._key("all") if principal is None else self._key("principal", principal)
        start = 0
        while True:
            ids = list(self._redis.zrange(key, start, start + 99))
            if not ids:
                return False
            for record in self._load(ids, 0.0):
                if record.terminal:
                    self.delete(record.id)
                    return True
            start += len(ids)

    def recover(self, now: float) -> int:
        """Fail the unfinished tasks of replicas whose lease ran out (this one's never)."""
        failed = 0
        message = REPLICA_GONE.format(seconds=self.lease)
        for replica in list(self._redis.smembers(self._key("replicas"))):
            if replica == self.process or self._redis.exists(self._key("lease", replica)):
                continue
            # Whoever removes the replica from the set recovers it: each task is failed once.
            if not self._redis.srem(self._key("replicas"), replica):
                continue
            running = self._key("running", replica)
            for record in self._load(list(self._redis.smembers(running)), now):
                if record.terminal:
                    continue
                record.status, record.message, record.pending = "failed", message, {}
                record.error = {"code": -32603, "message": message}
                record.updated = time.time()
                self.put(record)
                if self._on_change is not None:  # this replica's own listeners hear of it too
                    self._dispatch(self._on_change, record)
                failed += 1
            self._redis.delete(running)
            if failed:
                log.warning("replica %s is gone: %d of its tasks marked failed", replica, failed)
        return failed

    def on_change(self, callback: Callable[[TaskRecord], None]) -> None:
        self._on_change = callback
        self._capture_loop()

    def on_delivery(self, cancel: Delivery, answer: Delivery) -> None:
        self._cancel, self._answer = cancel, answer
        self._capture_loop()

    def on_notification(self, callback: Callable[[str, JSON], None]) -> None:
        """Where list changes and resource updates relayed by other replicas land."""
        self._on_notification = callback
        self._capture_loop()

    def relay_notification(self, method: str, params: JSON) -> None:
        """Tell the other replicas about a change this one noticed (`subscriptions`)."""
        self._redis.publish(self._events, json.dumps(
            {"kind": "notify", "from": self.process, "method": method, "params": params}))

    def request_cancel(self, task_id: str) -> None:
        self._send("cancel", task_id, None)

    def deliver_input(self, task_id: str, responses: JSON) -> None:
        self._send("input", task_id, responses)

    def close(self) -> None:
        """Stop the threads and give up the lease (survivors recover at once)."""
        if self._stop.is_set():
            return
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        try:
            self._redis.delete(self._key("lease", self.process))
            self._pubsub.close()
        finally:
            self._redis.close()

    # -- between replicas -------------------------------------------------------------

    def _send(self, kind: str, task_id: str, value: JSON | None) -> None:
        """Cancel or input for a task: handled here when this process runs it, or nobody
        does any more (the store settles the record); else published to its replica."""
        record = self.get(task_id, time.time())
        owner = None if record is None else record.owner
        if owner is None or owner == self.process or not self._redis.exists(self._key("lease", owner)):
            deliver = self._cancel if kind == "cancel" else self._answer
            if deliver is not None:
                deliver(task_id, value)
            return
        self._redis.publish(self._events, json.dumps(
            {"kind": kind, "from": self.process, "to": owner, "id": task_id, "value": value}))

    def _capture_loop(self) -> None:
        self._loop = running_asyncio_loop() or self._loop

    def _dispatch(self, fn: Callable[..., None], *args: Any) -> None:
        """Run a callback on the event loop that registered it (the store is not thread-safe)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop closed meanwhile
            pass

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                message = self._pubsub.get_message(timeout=0.2)
            except Exception as exc:  # a lost connection: retried, never fatal
                log.warning("task store: pub/sub: %s", exc)
                self._stop.wait(0.5)
                continue
            if message is None or message.get("type") != "message":
                continue
            try:
                event = json.loads(message["data"])
            except (TypeError, ValueError):
                continue
            if event.get("from") == self.process:
                continue
            kind = event.get("kind")
            if kind == "change" and self._on_change is not None:
                self._dispatch(self._on_change, TaskRecord.from_json(event["record"]))
            elif kind == "notify" and self._on_notification is not None:
                self._dispatch(self._on_notification, event["method"], event.get("params") or {})
            elif kind in ("cancel", "input") and event.get("to") == self.process:
                deliver = self._cancel if kind == "cancel" else self._answer
                if deliver is not None:
                    self._dispatch(deliver, event["id"], event.get("value"))

    def _heartbeat(self) -> None:
        last_recover = time.monotonic()
        while not self._stop.wait(self.lease / 3):
            try:
                self._renew()
                self._redis.sadd(self._key("replicas"), self.process)
                if time.monotonic() - last_recover >= self.lease / 2:
                    last_recover = time.monotonic()
                    self.recover(time.time())
            except Exception as exc:  # Redis away for a moment: keep trying
                log.warning("task store: heartbeat: %s", exc)


#: KEYS: task, expiry, all, principal, running (of the owner), events channel, principals (id -> key).
#: ARGV: record JSON, id, expiry in ms ("" for none), expiry score, created, terminal ("1"), message,
#: principal key.
_PUT = """
local current = redis.call('GET', KEYS[1])
if current then
  local status = cjson.decode(current)['status']
  if status == 'completed' or status == 'failed' or status == 'cancelled' then
    return 0
  end
end
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[1])
end
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[2])
redis.call('HSET', KEYS[7], ARGV[2], ARGV[8])
if ARGV[6] == '1' then
  redis.call('SREM', KEYS[5], ARGV[2])
else
  redis.call('SADD', KEYS[5], ARGV[2])
end
redis.call('PUBLISH', KEYS[6], ARGV[7])
return 1
"""


def _safe(url: str) -> str:
    """The URL without user info, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=host))
