"""How to sign in to one server: flags, then the config entry's `oauth` object, then env."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.config import ServerEntry

__all__ = ["DEFAULT_LOGIN_TIMEOUT", "DEVICE_GRANT", "MACHINE_GRANTS", "AuthSettings", "read_key_file"]

#: Grants that need no user: a new token is simply requested again when one expires.
MACHINE_GRANTS = ("client_credentials", "enterprise")
#: The user signs in on another device (RFC 8628): a code to enter at a URL, no browser here.
DEVICE_GRANT = "device_code"
DEFAULT_LOGIN_TIMEOUT = 300.0


@dataclass
class AuthSettings:
    """How to sign in to one server: flags, then the config entry's `oauth` object, then env."""

    name: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    scope: str | None = None
    client_metadata_url: str | None = None
    grant: str = "authorization_code"
    private_key_pem: str | None = None
    private_key_file: str | None = None
    signing_alg: str | None = None
    callback_port: int = 0
    no_browser: bool = False
    timeout: float = DEFAULT_LOGIN_TIMEOUT
    token_store: str | None = None
    #: `--profile` (or MCP_PROFILE): which account's tokens to use and store (None: the default).
    profile: str | None = None
    insecure: bool = False
    #: Enterprise-managed authorization (SEP-990): the IdP's token endpoint, our client id
    #: there, and the user's ID token from the enterprise sign-on.
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    id_token: str | None = None

    def login_target(self, server_url: str) -> str:
        """What to name in a `mcp auth login ...` hint: the server, and the profile if any."""
        target = self.name or server_url
        return target if self.profile is None else f"{target} --profile {self.profile}"

    def __repr__(self) -> str:
        return f"AuthSettings(name={self.name!r}, client_id={self.client_id!r}, <secrets redacted>)"

    @classmethod
    def build(
        cls,
        entry: ServerEntry | None = None,
        extra: Mapping[str, Any] | None = None,
        *,
        insecure: bool = False,
    ) -> AuthSettings:
        extra = dict(extra or {})
        conf = _entry_oauth(entry)
        env = os.environ

        def pick(key: str, conf_key: str, env_key: str | None = None) -> Any:
            if extra.get(key) not in (None, ""):
                return extra[key]
            if conf.get(conf_key) not in (None, ""):
                return conf[conf_key]
            if env_key and env.get(env_key):
                return env[env_key]
            return None

        scope = pick("scope", "scope", "MCP_OAUTH_SCOPE")
        if scope is None and isinstance(conf.get("scopes"), list):
            scope = " ".join(str(s) for s in conf["scopes"])
        grant = _grant_name(pick("grant", "grantType", "MCP_OAUTH_GRANT"))
        key_file = pick("private_key_file", "privateKeyFile", "MCP_OAUTH_PRIVATE_KEY_FILE")
        key_pem = pick("private_key_pem", "privateKey", "MCP_OAUTH_PRIVATE_KEY")
        if key_file and not key_pem:
            key_pem = read_key_file(str(key_file))
        timeout = pick("auth_timeout", "timeout", "MCP_AUTH_TIMEOUT")
        port = pick("callback_port", "callbackPort")
        try:
            timeout_f = float(timeout) if timeout is not None else DEFAULT_LOGIN_TIMEOUT
            port_i = int(port) if port is not None else 0
        except (TypeError, ValueError):
            raise UsageError("oauth timeout/callbackPort must be numbers") from None
        return cls(
            name=entry.name if entry is not None and entry.source not in ("argv", "") else None,
            client_id=pick("client_id", "clientId", "MCP_OAUTH_CLIENT_ID"),
            client_secret=pick("client_secret", "clientSecret", "MCP_OAUTH_CLIENT_SECRET"),
            scope=str(scope) if scope else None,
            client_metadata_url=pick("client_metadata_url", "clientMetadataUrl", "MCP_OAUTH_CLIENT_METADATA_URL"),
            grant=grant,
            private_key_pem=key_pem,
            private_key_file=str(key_file) if key_file else None,
            signing_alg=pick("signing_alg", "signingAlgorithm", "MCP_OAUTH_SIGNING_ALG"),
            callback_port=port_i,
            no_browser=bool(extra.get("no_browser")),
            timeout=timeout_f,
            token_store=extra.get("token_store") or conf.get("tokenStore"),
            profile=extra.get("profile") or None,
            insecure=insecure,
            idp_token_endpoint=pick("idp_token_endpoint", "idpTokenEndpoint", "MCP_OAUTH_IDP_TOKEN_ENDPOINT"),
            idp_client_id=pick("idp_client_id", "idpClientId", "MCP_OAUTH_IDP_CLIENT_ID"),
            id_token=extra.get("id_token") or env.get("MCP_OAUTH_ID_TOKEN") or None,
        )


def _grant_name(value: Any) -> str:
    """The grant's own name for `value` (an alias, or none for authorization_code)."""
    grant = value or "authorization_code"
    grant = {"client-credentials": "client_credentials", "clientCredentials": "client_credentials",
             "id-jag": "enterprise", "jwt-bearer": "enterprise",
             "device": DEVICE_GRANT, "device-code": DEVICE_GRANT, "deviceCode": DEVICE_GRANT}.get(str(grant), str(grant))
    if grant not in ("authorization_code", DEVICE_GRANT, *MACHINE_GRANTS):
        raise UsageError(
            f"unknown OAuth grant {grant!r} (authorization_code, device_code, client_credentials or enterprise)"
        )
    return grant


def _entry_oauth(entry: ServerEntry | None) -> dict[str, Any]:
    """The entry's `oauth` object with `${VAR}` interpolated in string values."""
    if entry is None:
        return {}
    raw = entry.raw.get("oauth")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UsageError(f"server {entry.name!r}: 'oauth' must be an object")
    from mcpcli.config import interpolate

    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            value = interpolate(value, where=f"server {entry.name!r} oauth.{key}")
        out[key] = value
    return out


def read_key_file(path: str) -> str:
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as fh:
            return fh.read(64 * 1024)
    except OSError as exc:
        raise UsageError(f"cannot read private key {path}: {exc.strerror}") from None
