"""Where sign-ins live: secrets in the OS keyring (or an opted-in file), facts in an index.

Two parts:

* the **index**, `$XDG_STATE_HOME/mcpcli/auth/servers.json` (0600, no secrets):
  one `Record` per server URL with the issuer, resource, endpoints, client id,
  scopes and expiry, so `mcp auth status` and the transports can find a
  sign-in without touching the keyring;
* the **secrets** (access token, refresh token, client secret), keyed by
  authorization server (issuer) and resource. By default in the OS keyring
  (`KeyringSecrets` in keyring_secrets.py: time-limited calls, no plaintext
  fallback). `--token-store file` / `MCP_TOKEN_STORE=file` opts into
  `$XDG_STATE_HOME/mcpcli/auth/tokens.json` (0600 in a 0700 directory, atomic
  writes, symlinks refused).

Writers hold an exclusive lock file (`auth/lock`, `FileLock` in lock.py) so
concurrent `mcp` processes never lose an update; `TokenStore.locked()` is also
what serialises token refreshes across processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from mcpcli.auth.keyring_secrets import KeyringSecrets
from mcpcli.auth.lock import FileLock, ensure_private_dir
from mcpcli.core import jsonrpc
from mcpcli.errors import AuthError, UsageError

__all__ = [
    "Record",
    "Secrets",
    "TokenStore",
    "store_mode",
]

STORE_MODES = ("keyring", "file")
#: Secret kinds kept per (issuer, resource).
KINDS = ("access_token", "refresh_token", "client_secret")


def _warn_stderr(message: str) -> None:
    sys.stderr.write(f"mcp: warning: {message}\n")
    sys.stderr.flush()


#: Where the store reports recoverable problems (a damaged file, loose permissions).
warn: Callable[[str], None] = _warn_stderr


def auth_dir() -> Path:
    from mcpcli.config import state_dir

    return state_dir() / "auth"


def store_mode(explicit: str | None = None) -> str:
    """The token store for new sign-ins: --token-store, else MCP_TOKEN_STORE, else keyring."""
    mode = (explicit or os.environ.get("MCP_TOKEN_STORE") or "keyring").strip().lower()
    if mode not in STORE_MODES:
        raise UsageError(
            f"unknown token store {mode!r}", hint="use --token-store keyring or --token-store file"
        )
    return mode


# -- records ---------------------------------------------------------------------------


def index_key(server_url: str, profile: str | None) -> str:
    return server_url if profile is None else f"{profile}@{server_url}"


@dataclass
class Record:
    """What is known about one server's sign-in (no secrets)."""

    server_url: str
    resource: str
    issuer: str | None
    token_endpoint: str
    client_id: str
    #: "none", "client_secret_basic", "client_secret_post" or "private_key_jwt".
    auth_method: str = "none"
    #: "dynamic", "metadata-document", "pre-registered" (how the client id was obtained).
    registration: str = "dynamic"
    #: "authorization_code" or "client_credentials".
    grant: str = "authorization_code"
    authorization_endpoint: str | None = None
    revocation_endpoint: str | None = None
    #: Client authentication for revocation, when the server wants another one than the token endpoint.
    revocation_auth_method: str | None = None
    redirect_uri: str | None = None
    #: Scopes granted (space separated), as the token response said (or as requested).
    scope: str | None = None
    #: Scopes we asked for, kept for the union on step-up.
    requested_scope: str | None = None
    expires_at: float | None = None
    obtained_at: float | None = None
    has_refresh_token: bool = False
    has_client_secret: bool = False
    store: str = "keyring"
    name: str | None = None
    #: The authorization server's advertised scopes (offline_access policy on refresh).
    as_scopes_supported: list[str] | None = None
    #: private_key_jwt clients: the PEM file to sign assertions with (the key is not copied).
    private_key_file: str | None = None
    signing_alg: str | None = None
    #: `--profile`: one of several accounts on this server (None: the default one).
    profile: str | None = None

    @property
    def index_key(self) -> str:
        """Where the index keeps this sign-in: the URL (default profile, as before
        profiles existed), else `PROFILE@URL` (never a URL: `@` cannot be in a scheme)."""
        return index_key(self.server_url, self.profile)

    @property
    def secret_prefix(self) -> str:
        # The default profile keeps the keys sign-ins had before profiles existed.
        base = f"{self.issuer or self.token_endpoint}|{self.resource}"
        return base if self.profile is None else f"{self.profile}@{base}"

    def secret_key(self, kind: str) -> str:
        return f"{self.secret_prefix}|{kind}"

    def expired(self, *, margin: float = 30.0, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return (now or time.time()) >= self.expires_at - margin

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, doc: Any) -> Record | None:
        if not isinstance(doc, dict):
            return None
        known = {f.name for f in fields(cls)}
        try:
            rec = cls(**{k: v for k, v in doc.items() if k in known})
        except TypeError:
            return None
        if not all(isinstance(x, str) for x in (rec.server_url, rec.resource, rec.token_endpoint, rec.client_id)):
            return None
        return rec


@dataclass
class Secrets:
    access_token: str | None = None
    refresh_token: str | None = None
    client_secret: str | None = None

    def __repr__(self) -> str:  # never print secrets
        have = [k for k in KINDS if getattr(self, k)]
        return f"Secrets(<redacted: {', '.join(have) or 'none'}>)"


# -- private files ------------------------------------------------------------------------


def read_private_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from a 0600 file we own; None if absent. Symlinks are refused."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if path.is_symlink():
            raise AuthError(f"refusing to read {path}: it is a symbolic link") from None
        raise AuthError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if os.name == "posix":
            st = os.fstat(fh.fileno())
            if st.st_mode & 0o077:
                warn(f"{path} was readable by others (mode {st.st_mode & 0o777:o}); tightened to 0600")
                os.fchmod(fh.fileno(), 0o600)
        data = fh.read(16 * 1024 * 1024)
    try:
        doc = jsonrpc.loads(data.decode("utf-8")) if data.strip() else {}
    except (ValueError, UnicodeDecodeError):
        doc = None
    if not isinstance(doc, dict):
        aside = path.with_name(f"{path.name}.damaged-{int(time.time())}")
        with contextlib.suppress(OSError):
            os.replace(path, aside)
        warn(f"{path} was damaged; moved it to {aside.name} and started afresh (sign in again)")
        return {}
    return doc


def write_private_json(path: Path, doc: dict[str, Any]) -> None:
    """Atomically replace `path` (temp file, fsync, rename), mode 0600 whatever the umask."""
    ensure_private_dir(path.parent)
    if path.is_symlink():
        raise AuthError(f"refusing to write {path}: it is a symbolic link")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600) if hasattr(os, "fchmod") else None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class FileSecrets:
    """Secrets in `auth/tokens.json` (explicit opt-in only)."""

    name = "file"

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or auth_dir() / "tokens.json"

    def _load(self) -> dict[str, str]:
        doc = read_private_json(self.path) or {}
        secrets = doc.get("secrets")
        if not isinstance(secrets, dict):
            return {}
        return {k: v for k, v in secrets.items() if isinstance(k, str) and isinstance(v, str)}

    def _save(self, secrets: dict[str, str]) -> None:
        write_private_json(self.path, {"version": 1, "secrets": secrets})

    def get(self, key: str) -> str | None:
        return self._load().get(key)

    def set(self, key: str, value: str) -> None:
        secrets = self._load()
        secrets[key] = value
        self._save(secrets)

    def delete(self, key: str) -> None:
        secrets = self._load()
        if secrets.pop(key, None) is not None:
            self._save(secrets)

    def location(self) -> str:
        return f"file {self.path}"


# -- the store ----------------------------------------------------------------------------


class TokenStore:
    """The index plus the secret stores; `mode` picks where new sign-ins go."""

    def __init__(
        self, mode: str | None = None, *, directory: Path | None = None, profile: str | None = None
    ) -> None:
        self.mode = store_mode(mode)
        #: The account this store finds and saves (`--profile`; None: the default one).
        self.profile = profile
        self.dir = directory or auth_dir()
        self.index_path = self.dir / "servers.json"
        self.lock_path = self.dir / "lock"
        self._secrets: dict[str, KeyringSecrets | FileSecrets] = {}
        self.lock = FileLock(self.lock_path)

    # secrets backends
    def secrets(self, name: str | None = None) -> KeyringSecrets | FileSecrets:
        name = name or self.mode
        if name not in self._secrets:
            self._secrets[name] = (
                FileSecrets(self.dir / "tokens.json") if name == "file" else KeyringSecrets()
            )
        return self._secrets[name]

    def check_writable(self) -> None:
        """Fail early (before a browser opens) if new secrets could not be stored."""
        backend = self.secrets()
        if isinstance(backend, KeyringSecrets):
            backend.backend()

    def location(self, name: str | None = None) -> str:
        return self.secrets(name).location()

    def locked(self) -> FileLock:
        """The store's inter-process lock, as a (re-entrant) context manager."""
        return self.lock

    # the index
    def _load_index(self) -> dict[str, Any]:
        doc = read_private_json(self.index_path) or {}
        servers = doc.get("servers")
        return servers if isinstance(servers, dict) else {}

    def records(self, *, every_profile: bool = True) -> list[Record]:
        """Every sign-in (of every profile, unless `every_profile` is false)."""
        out = []
        for key, raw in self._load_index().items():
            rec = Record.from_json(raw)
            if rec is None or rec.index_key != key:
                warn(f"ignoring a damaged sign-in entry for {key!r} in {self.index_path}")
                continue
            if every_profile or rec.profile == self.profile:
                out.append(rec)
        return out

    def find(self, server_url: str) -> Record | None:
        """This store's profile's sign-in for the URL."""
        key = index_key(server_url, self.profile)
        raw = self._load_index().get(key)
        if raw is None:
            return None
        rec = Record.from_json(raw)
        if rec is None or rec.index_key != key:
            warn(f"ignoring a damaged sign-in entry for {key!r}; sign in again")
            return None
        return rec

    def find_by_name(self, name: str) -> Record | None:
        for rec in self.records(every_profile=False):
            if rec.name == name:
                return rec
        return None

    def secrets_of(self, rec: Record) -> Secrets:
        backend = self.secrets(rec.store)
        out = Secrets()
        out.access_token = backend.get(rec.secret_key("access_token"))
        if rec.has_refresh_token:
            out.refresh_token = backend.get(rec.secret_key("refresh_token"))
        if rec.has_client_secret:
            out.client_secret = backend.get(rec.secret_key("client_secret"))
        return out

    def save(self, rec: Record, secrets: Secrets) -> None:
        """Secrets first, then the index entry, under the lock."""
        with self.locked():
            servers = self._load_index()
            old = Record.from_json(servers.get(rec.index_key))
            backend = self.secrets(rec.store)
            for kind in KINDS:
                value = getattr(secrets, kind)
                if value:
                    backend.set(rec.secret_key(kind), value)
                elif getattr(rec, f"has_{kind}", True) or getattr(old, f"has_{kind}", False):
                    backend.delete(rec.secret_key(kind))
            if old is not None and (old.secret_prefix, old.store) != (rec.secret_prefix, rec.store):
                self._drop_secrets(old, servers)
            rec.has_refresh_token = bool(secrets.refresh_token)
            rec.has_client_secret = bool(secrets.client_secret)
            servers[rec.index_key] = rec.to_json()
            write_private_json(self.index_path, {"version": 1, "servers": servers})

    def delete(self, rec: Record) -> None:
        """Forget one server's sign-in; secrets go unless another entry shares them."""
        with self.locked():
            servers = self._load_index()
            servers.pop(rec.index_key, None)
            write_private_json(self.index_path, {"version": 1, "servers": servers})
            self._drop_secrets(rec, servers)

    def _drop_secrets(self, rec: Record, servers: dict[str, Any]) -> None:
        for key, raw in servers.items():
            other = Record.from_json(raw)
            if (
                key != rec.index_key
                and other is not None
                and (other.secret_prefix, other.store) == (rec.secret_prefix, rec.store)
            ):
                return  # still in use by another server entry
        backend = self.secrets(rec.store)
        for kind in KINDS:
            backend.delete(rec.secret_key(kind))
