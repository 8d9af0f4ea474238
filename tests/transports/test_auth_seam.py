"""The transport <-> auth seam: `HttpConnection` with a recording `AuthProvider` (in process).

The transport decides which credentials apply (a bearer token or an `Authorization`
header given by the user, the provider's authenticator, or nothing) and builds the
authenticator lazily: before the first request only when a sign-in is stored,
otherwise after the first 401.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
from httpfake import FakeHTTP, Reply, Req

from mcpcli.errors import AuthError
from mcpcli.transports.http import HttpConnection

TOKEN = "Bearer from-the-authenticator"


class RecordingAuth:
    """An `Authenticator` handing out TOKEN once it has seen a challenge (or at once)."""

    def __init__(self, signed_in: bool) -> None:
        self.signed_in = signed_in
        self.challenges: list[int] = []

    async def authorization(self) -> str | None:
        return TOKEN if self.signed_in else None

    async def challenge(self, status: int, www_authenticate: list[str], url: str) -> bool:
        self.challenges.append(status)
        self.signed_in = True
        return True


class RecordingProvider:
    def __init__(self, stored: bool) -> None:
        self.stored = stored
        self.events: list[str] = []
        self.auth = RecordingAuth(signed_in=stored)

    def has_stored_sign_in(self) -> bool:
        self.events.append("stored?")
        return self.stored

    def authenticator(self) -> RecordingAuth:
        self.events.append("built")
        return self.auth


def _needs_token(req: Req) -> Reply:
    if req.header("authorization") != TOKEN:
        return Reply(401, {"WWW-Authenticate": 'Bearer realm="x"'}, b"no")
    return Reply(200, {"Content-Type": "text/plain"}, b"ok")


def _get_twice(conn: HttpConnection) -> list[int]:
    async def go() -> list[int]:
        statuses = []
        try:
            for _ in range(2):
                async with conn.send("GET") as response:
                    statuses.append(response.status)
        finally:
            await conn.aclose()
        return statuses

    return anyio.run(go)


def test_without_a_stored_sign_in_the_authenticator_is_built_after_the_first_401(
    fake: Callable[..., FakeHTTP],
) -> None:
    server = fake(_needs_token)
    provider = RecordingProvider(stored=False)
    assert _get_twice(HttpConnection(server.url, auth=provider)) == [200, 200]
    assert provider.events == ["stored?", "built"]  # asked once; built on the 401
    assert [r.header("authorization") for r in server.requests] == [None, TOKEN, TOKEN]
    assert provider.auth.challenges == [401]


def test_a_stored_sign_in_goes_out_with_the_first_request(fake: Callable[..., FakeHTTP]) -> None:
    server = fake(_needs_token)
    provider = RecordingProvider(stored=True)
    assert _get_twice(HttpConnection(server.url, auth=provider)) == [200, 200]
    assert provider.events == ["stored?", "built"]
    assert [r.header("authorization") for r in server.requests] == [TOKEN, TOKEN]
    assert provider.auth.challenges == []


@pytest.mark.parametrize(
    ("settings", "sent"),
    [
        ({"bearer_token": "given"}, "Bearer given"),
        ({"headers": {"authorization": "Basic abc"}}, "Basic abc"),
        ({"headers": {"Authorization": "Basic abc"}, "bearer_token": "ignored"}, "Basic abc"),
    ],
)
def test_credentials_the_user_gave_are_never_replaced_by_a_sign_in(
    fake: Callable[..., FakeHTTP], settings: dict[str, object], sent: str
) -> None:
    server = fake(_needs_token)
    provider = RecordingProvider(stored=True)
    with pytest.raises(AuthError) as info:
        _get_twice(HttpConnection(server.url, auth=provider, **settings))  # type: ignore[arg-type]
    assert info.value.hint == "the server rejected the token or Authorization header given"
    assert provider.events == []  # neither the store nor the authenticator was consulted
    assert [r.header("authorization") for r in server.requests] == [sent]


def test_no_provider_means_no_sign_in(fake: Callable[..., FakeHTTP]) -> None:
    server = fake(_needs_token)
    with pytest.raises(AuthError) as info:
        _get_twice(HttpConnection(server.url, auth=None))
    assert info.value.hint == "the server requires authorization; --no-auth was given"
    assert [r.header("authorization") for r in server.requests] == [None]
