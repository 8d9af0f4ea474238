"""Keyring backends that misbehave, for tests (importable by PYTHON_KEYRING_BACKEND too)."""

from __future__ import annotations

import json
import os
import threading

import keyring.backend
import keyring.errors


class RaisingKeyring(keyring.backend.KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.KeyringLocked("the collection is locked")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.PasswordSetError("cannot write")

    def delete_password(self, service: str, username: str) -> None:
        raise keyring.errors.PasswordDeleteError("cannot delete")


#: Released by tests at teardown so no thread stays blocked.
RELEASE = threading.Event()


class HangingKeyring(keyring.backend.KeyringBackend):
    """Blocks like a Secret Service waiting for an unlock prompt nobody can see."""

    priority = 1  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        RELEASE.wait(120)
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        RELEASE.wait(120)

    def delete_password(self, service: str, username: str) -> None:
        RELEASE.wait(120)


class PlaintextLikeKeyring(keyring.backend.KeyringBackend):
    """Stands in for keyrings.alt's plaintext file backend (module name decides)."""

    priority = 1  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        pass

    def delete_password(self, service: str, username: str) -> None:
        pass


PlaintextLikeKeyring.__module__ = "keyrings.alt.file"


class JsonFileKeyring(keyring.backend.KeyringBackend):
    """A keyring shared by processes (a JSON file at $TEST_KEYRING_FILE): subprocess tests."""

    priority = 1  # type: ignore[assignment]

    def _path(self) -> str:
        return os.environ["TEST_KEYRING_FILE"]

    def _load(self) -> dict[str, str]:
        try:
            with open(self._path(), encoding="utf-8") as fh:
                return json.load(fh)
        except FileNotFoundError:
            return {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}\x00{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}\x00{username}"] = password
        tmp = self._path() + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, self._path())

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(f"{service}\x00{username}", None) is None:
            raise keyring.errors.PasswordDeleteError(username)
        with open(self._path(), "w", encoding="utf-8") as fh:
            json.dump(data, fh)
