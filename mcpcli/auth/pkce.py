"""PKCE (RFC 7636, S256 only) and the single-use `state` value."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field

__all__ = ["Pkce", "b64url", "new_state"]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def new_state() -> str:
    """256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Pkce:
    """A fresh verifier (64 characters from the unreserved set) and its S256 challenge."""

    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48))
    method: str = "S256"

    @property
    def challenge(self) -> str:
        return b64url(hashlib.sha256(self.verifier.encode("ascii")).digest())

    def __repr__(self) -> str:  # never print the verifier
        return "Pkce(verifier=<redacted>)"
