"""Secrets in the OS keyring, every call bounded by a time limit.

Every keyring call runs in a daemon thread with a time limit (a locked Secret
Service can block forever). Keyring backends that are not a real keyring
(`fail`, `null`, `keyrings.alt` plaintext files) count as "no keyring": we then
stop with an error that names the options instead of writing plaintext
silently.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from mcpcli.errors import AuthError

__all__ = ["KeyringSecrets", "call_with_timeout", "keyring_timeout"]

T = TypeVar("T")
SERVICE = "mcpcli"


def keyring_timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("MCP_KEYRING_TIMEOUT", "10")))
    except ValueError:
        return 10.0


def call_with_timeout(fn: Callable[[], T], timeout: float, what: str) -> T:
    """Run `fn` in a daemon thread; give up after `timeout` seconds (the thread may linger)."""
    done = threading.Event()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name=f"mcpcli-{what}", daemon=True).start()
    if not done.wait(timeout):
        raise AuthError(
            f"the keyring did not respond within {timeout:g}s ({what}); it may be locked, "
            "or waiting for a password prompt that cannot be shown",
            hint="unlock the keyring, or use --token-store file (MCP_TOKEN_STORE=file)",
        )
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


_NO_KEYRING_HINT = (
    "use --token-store file (or MCP_TOKEN_STORE=file) to keep tokens in a 0600 file under "
    "the XDG state directory, run inside `dbus-run-session` with an unlocked keyring, "
    "or pass a token with MCP_BEARER_TOKEN"
)


def _not_a_keyring(backend: Any) -> str | None:
    """Why `backend` is no real keyring (None if it is one)."""
    cls = type(backend)
    module = cls.__module__
    name = f"{module}.{cls.__qualname__}"
    if module.startswith("keyring.backends.fail") or module.startswith("keyring.backends.null"):
        return name
    if module.startswith("keyrings.alt"):
        return f"{name} (a plaintext file, not a keyring)"
    if module.startswith("keyring.backends.chainer"):
        inner = [b for b in getattr(backend, "backends", []) if _not_a_keyring(b) is None]
        if not inner:
            return f"{name} (no usable backend inside)"
    return None


class KeyringSecrets:
    """Secrets in the OS keyring, every call bounded by a timeout."""

    name = "keyring"

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = keyring_timeout() if timeout is None else timeout
        self._backend: Any = None

    def backend(self) -> Any:
        if self._backend is None:

            def load() -> Any:
                import keyring

                return keyring.get_keyring()

            try:
                backend = call_with_timeout(load, self.timeout, "loading the keyring")
            except AuthError:
                raise
            except Exception as exc:  # a bad PYTHON_KEYRING_BACKEND raises ModuleNotFoundError
                raise AuthError(
                    f"no usable keyring to store sign-ins in ({type(exc).__name__}: {_first_line(exc)})",
                    hint=_NO_KEYRING_HINT,
                ) from None
            why = _not_a_keyring(backend)
            if why is not None:
                raise AuthError(
                    f"no usable keyring to store sign-ins in (keyring backend: {why})",
                    hint=_NO_KEYRING_HINT,
                )
            self._backend = backend
        return self._backend

    def _call(self, what: str, fn: Callable[[Any], T]) -> T:
        backend = self.backend()
        try:
            return call_with_timeout(lambda: fn(backend), self.timeout, what)
        except AuthError:
            raise
        except Exception as exc:
            raise AuthError(
                f"the keyring failed ({what}): {type(exc).__name__}: {_first_line(exc)}",
                hint=_NO_KEYRING_HINT,
            ) from None

    def get(self, key: str) -> str | None:
        value = self._call("reading a secret", lambda b: b.get_password(SERVICE, key))
        return value if isinstance(value, str) else None

    def set(self, key: str, value: str) -> None:
        self._call("saving a secret", lambda b: b.set_password(SERVICE, key, value))

    def delete(self, key: str) -> None:
        def remove(b: Any) -> None:
            import keyring.errors

            try:
                b.delete_password(SERVICE, key)
            except keyring.errors.PasswordDeleteError:
                pass

        self._call("deleting a secret", remove)

    def location(self) -> str:
        try:
            backend = self.backend()
        except AuthError:
            return "OS keyring (unavailable)"
        return f"OS keyring ({type(backend).__module__}.{type(backend).__qualname__})"


def _first_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
