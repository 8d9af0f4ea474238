"""Which scope to ask for: --scope, the challenge, the resource metadata, step-up unions."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpcli.auth.metadata import AuthServer, Challenge, Discovery
    from mcpcli.auth.settings import AuthSettings

__all__ = ["select_scope", "union_scopes", "with_offline_access"]


def _scopes(text: str | None) -> list[str]:
    return [s for s in (text or "").split() if s]


def union_scopes(*texts: str | None) -> str | None:
    seen: list[str] = []
    for text in texts:
        for s in _scopes(text):
            if s not in seen:
                seen.append(s)
    return " ".join(seen) or None


def select_scope(settings: AuthSettings, disc: Discovery, challenge: Challenge | None) -> str | None:
    """--scope, else the challenge's scope, else the PRM's scopes_supported, else none."""
    if settings.scope:
        return settings.scope
    if challenge is not None and challenge.scope:
        return challenge.scope
    if disc.resource.scopes_supported:
        return " ".join(disc.resource.scopes_supported)
    return None


def with_offline_access(scope: str | None, server: AuthServer) -> str | None:
    """Ask for a refresh token with `offline_access` when the AS lists it (and we send a scope)."""
    if not scope or not server.scopes_supported or "offline_access" not in server.scopes_supported:
        return scope
    if "offline_access" in _scopes(scope):
        return scope
    return f"{scope} offline_access"
