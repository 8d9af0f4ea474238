"""A supervised upstream: one `Client` held across connections, made again by a policy.

The session daemon holds one per session and the gateway one per upstream. What differs
between them is a `Policy` and the hooks of their `Owner`:

* the daemon under `restart: on-failure`: a connection that was up and ended, or one made
  again that failed, is tried again after 0.5 s doubling up to 30 s, five times in a row
  at most; otherwise (and under `restart: no`) the session waits, exited, for a
  `restart` (or its idle timeout);
* the gateway: a connection that was up and ended is made again in the background after
  the same doubling delays, without end; one that could not be made stops the
  supervisor, and the next request starts it again once the delay has passed (no
  sign-in page or failing command every few seconds).

A connection that stayed up long enough (`Backoff.stable_after`) starts the count again,
and so does a restart asked for while a connection is up (`Supervisor.restart`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.abc

from mcpcli.errors import unwrap

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["Backoff", "Owner", "Policy", "Retries", "Supervisor"]


@dataclass(frozen=True)
class Backoff:
    """When to try again after failures in a row: `first` seconds, then twice the last
    delay up to `cap`; `attempts` times in a row at most (None: no end). A connection that
    stayed up `stable_after` seconds (None: `cap`) was no failure: the count starts again."""

    first: float = 0.5
    cap: float = 30.0
    attempts: int | None = None
    stable_after: float | None = None


class Retries:
    """A `Backoff` being followed: the failures in a row and the delay they have reached."""

    __slots__ = ("_last", "backoff", "failures")

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff
        self.failures = 0
        self._last = 0.0

    def next(self) -> float | None:
        """The delay before the next try after one more failure (None: no more tries)."""
        backoff = self.backoff
        if backoff.attempts is not None and self.failures >= backoff.attempts:
            return None
        self._last = backoff.first if self.failures == 0 else min(self._last * 2, backoff.cap)
        self.failures += 1
        return self._last

    def up_for(self, seconds: float) -> None:
        """A connection was up this long: long enough, and the failures before it are forgiven."""
        stable = self.backoff.cap if self.backoff.stable_after is None else self.backoff.stable_after
        if seconds >= stable:
            self.reset()

    def reset(self) -> None:
        self.failures = 0


@dataclass(frozen=True)
class Policy:
    """When a supervisor makes its connection again."""

    backoff: Backoff = Backoff()
    #: A connection that was up and ended is made again on its own, after the backoff's delay.
    after_lost: bool = True
    #: A connection that could not be made is tried again on its own (once one has been up).
    after_failed: bool = False
    #: When nothing is tried on its own: "wait" for `Supervisor.restart` (or for the
    #: owner's `rest` to give up), or "stop" (`start` may run it again once the backoff's
    #: next delay has passed).
    otherwise: Literal["wait", "stop"] = "stop"


class Owner:
    """What a supervisor tells the one it holds its connection for. Each hook is a no-op
    here (`hold` waits for the server to go away, `rest` for the wake); an owner
    overrides those it needs."""

    def connecting(self) -> None:
        """A connection is about to be made (in the supervisor's task)."""

    def connected(self, client: Client) -> None:
        """It is up: the handshake is done."""

    async def hold(self, client: Client) -> None:
        """Until the connection should end (a restart or `close` cancels it)."""
        await client.peer.wait_closed()

    def disconnected(self) -> None:
        """The connection is gone, or was never made (also when the supervisor is cancelled)."""

    def ended(self, reason: Exception | None, *, was_up: bool) -> None:
        """It ended on its own (or could not be made: `was_up` false); `reason` says why
        when that is known. Followed by `retrying`, `rest` or nothing (the supervisor stops)."""

    def retrying(self, delay: float) -> None:
        """It is made again on its own after `delay` seconds."""

    def restarting(self) -> None:
        """It is made again at once, as `Supervisor.restart` asked."""

    async def rest(self, wake: anyio.Event) -> None:
        """Nothing is tried on its own (policy "wait"): return when `wake` is set (a
        restart, or `close`), or to give up."""
        await wake.wait()


class Supervisor:
    """Holds its owner's upstream `Client` (`client`, None while not connected) across
    connections, made by `connect`, under `policy`. `await run()` in the owner's task, or
    `start(tg)`; cancelling the task ends the connection."""

    def __init__(
        self,
        connect: Callable[[], AbstractAsyncContextManager[Client]],
        owner: Owner,
        policy: Policy,
    ) -> None:
        self._connect = connect
        self._owner = owner
        self.policy = policy
        self.retries = Retries(policy.backoff)
        self.client: Client | None = None
        #: A connection has been up at least once.
        self.ever_up = False
        #: `run` is under way (or about to be, after `start`).
        self.running = False
        self.closing = False
        #: A supervisor that stopped (policy "stop") is not started before this time.
        self.retry_at = -float("inf")
        #: "up" from the handshake until the supervisor has decided what follows the connection.
        self._up = False
        self._restart = False
        self._hold_scope: anyio.CancelScope | None = None
        self._wake: anyio.Event | None = None
        self._closed: anyio.Event | None = None

    def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Run in `tg` (a new task: it inherits none of the caller's context variables' later values)."""
        self.running = True
        tg.start_soon(self.run)

    def may_start(self) -> bool:
        """Whether a stopped supervisor's delay has passed."""
        return anyio.current_time() >= self.retry_at

    def restart(self) -> bool:
        """Make the connection again at once: the one that is up ends, or a supervisor
        waiting after a failure wakes. False when there is none to end or wake (it is
        connecting, or waiting out a delay: the coming connection is the new one)."""
        if self._up:
            self._restart = True
            if self._hold_scope is not None:
                self._hold_scope.cancel()
            return True
        if self._wake is not None:
            self._restart = True
            self._wake.set()
            return True
        return False

    def close(self) -> None:
        """Stop: the connection that is up ends, and none is made again."""
        self.closing = True
        if self._closed is not None:  # else `run` has not begun (it will see `closing`)
            self._closed.set()
        if self._hold_scope is not None:
            self._hold_scope.cancel()
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        """Hold a connection, and make it again as the policy says; return when the policy
        stops (or the supervisor is closed)."""
        self.running = True
        if self._closed is None:
            self._closed = anyio.Event()
        try:
            while not self.closing:
                reason, up_for = await self._connection()
                self._up = False
                if self._take_restart():
                    self.retries.reset()
                    self._owner.restarting()
                    continue
                was_up = up_for is not None
                self._owner.ended(reason, was_up=was_up)
                if self._closed.is_set():  # closed meanwhile
                    return
                if up_for is not None:
                    self.retries.up_for(up_for)
                policy = self.policy
                automatic = policy.after_lost if was_up else policy.after_failed and self.ever_up
                delay = self.retries.next() if automatic else None
                if delay is not None:
                    self._owner.retrying(delay)
                    with anyio.move_on_after(delay):
                        await self._closed.wait()
                    continue
                if policy.otherwise == "stop":
                    self.retry_at = anyio.current_time() + (self.retries.next() or 0.0)
                    return
                self._wake = anyio.Event()
                try:
                    await self._owner.rest(self._wake)
                finally:
                    self._wake = None
                if not self._take_restart():
                    return
                self._owner.restarting()
        finally:
            self.running = self._up = False

    async def _connection(self) -> tuple[Exception | None, float | None]:
        """One connection, held until it ends: why it ended (None: not known, or asked to)
        and how long it was up (None: it never came up)."""
        reason: Exception | None = None
        up_at: float | None = None
        self._owner.connecting()
        try:
            async with self._connect() as client:
                self.client = client
                self.ever_up = self._up = True
                up_at = anyio.current_time()
                self._owner.connected(client)
                with anyio.CancelScope() as self._hold_scope:
                    if self.closing:
                        self._hold_scope.cancel()
                    await self._owner.hold(client)
                self._hold_scope = None
                reason = client.peer.closed
        except Exception as exc:  # the upstream's failure, whatever its shape
            inner = unwrap(exc)
            reason = inner if isinstance(inner, Exception) else exc
        finally:
            self.client = None
            self._hold_scope = None
            self._owner.disconnected()
        return reason, None if up_at is None else anyio.current_time() - up_at

    def _take_restart(self) -> bool:
        asked, self._restart = self._restart, False
        return asked
