"""A real OAuth 2.1 authorization server + protected MCP endpoint on loopback, for tests.

One `ThreadingHTTPServer` on 127.0.0.1 serves:

* `/.well-known/oauth-protected-resource/mcp` (RFC 9728) naming itself as the AS,
* `/.well-known/oauth-authorization-server` (RFC 8414),
* `/register` (RFC 7591 DCR), `/authorize` (redirects at once, like the
  conformance mock: a scripted "browser" just follows the redirect),
* `/token` (authorization_code with PKCE S256 verification and single-use codes,
  refresh_token with rotation (the old one dies on use), client_credentials, and with
  `device=True` the device code grant of `/device` (RFC 8628): the person "on the other
  device" approves at the `device_approve_at`-th poll, or declines, or lets it expire),
  `/revoke` (RFC 7009),
* `/mcp`: a tiny stateless Streamable HTTP MCP server (JSON responses) that
  demands a bearer token issued for its resource; tool `write` needs the scope
  `mcp:write` (403 `insufficient_scope` otherwise).

Every secret it issues is a canary (`AT-CANARY-…`, `RT-CANARY-…`, `CODE-CANARY-…`,
`CS-CANARY-…`) so tests can grep outputs for leaks. Behaviour is switched with
`OAuthServer(**options)`; everything it received is in `.requests`.

Run standalone (for manual testing): `python tests/fakes/oauth_server.py [PORT]`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

JSON = dict[str, Any]
DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


def canary(prefix: str) -> str:
    return f"{prefix}-CANARY-{uuid.uuid4().hex}"


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@dataclass
class Options:
    #: PKCE methods advertised; None omits the field.
    pkce_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    iss_supported: bool | None = True
    #: "correct", "omit", "wrong" or "slash" (issuer + "/").
    iss_mode: str = "correct"
    auth_methods: list[str] = field(default_factory=lambda: ["none", "client_secret_basic", "client_secret_post"])
    #: PRM scopes_supported.
    scopes_supported: list[str] | None = None
    #: AS metadata scopes_supported.
    as_scopes_supported: list[str] | None = None
    #: scope= in the 401 challenge.
    challenge_scope: str | None = None
    prm_in_header: bool = True
    prm_path: str = "/.well-known/oauth-protected-resource/mcp"
    prm_resource: str | None = None  # override (resource mismatch)
    metadata_issuer: str | None = None  # override (issuer mismatch)
    authorization_endpoint: str | None = None  # override (hostile URL)
    registration: bool = True
    cimd: bool = False
    revocation: bool = True
    access_ttl: int = 3600
    refresh_ttl: int | None = None
    issue_refresh: bool = True
    rotate_refresh: bool = True
    authorize_error: str | None = None
    #: Pre-registered clients: id -> secret (None = public).
    clients: dict[str, str | None] = field(default_factory=dict)
    #: Block /token until this event is set (refresh race tests).
    token_gate: threading.Event | None = None
    #: Serve protected-resource metadata / AS metadata at all (2025-03-26 fallback tests).
    prm: bool = True
    as_metadata: bool = True
    #: private_key_jwt clients: id -> PEM public key.
    jwt_clients: dict[str, str] = field(default_factory=dict)
    #: Answer /register with this (status, raw body) instead (hostile DCR tests).
    register_response: tuple[int, str] | None = None
    #: Refuse every refresh, echoing the refresh token in error_description (scrubbing tests).
    refresh_error_echo: bool = False
    #: tools/call always gets 403 insufficient_scope for this scope (retry-limit tests).
    always_insufficient: str | None = None
    #: The MCP endpoint needs no token at all.
    require_auth: bool = True
    #: RFC 8628: publish `/device`; the interval it asks for; what the person on the other
    #: device does ("approve", "deny" or "expire") at which poll; `slow_down` answers first.
    device: bool = False
    device_interval: int = 0
    device_outcome: str = "approve"
    device_approve_at: int = 2
    device_slow_downs: int = 0
    #: The verification_uri the device answer gives instead of its own (hostile tests).
    device_verification_uri: str | None = None


@dataclass
class Client:
    client_id: str
    secret: str | None
    redirect_uris: list[str]
    auth_method: str
    body: JSON = field(default_factory=dict)


@dataclass
class Grant:
    client_id: str
    scope: str
    resource: str | None
    expires_at: float
    #: Who signed in (the browser's user when the code was issued).
    user: str = "alice"


class OAuthServer:
    """The server; use as a context manager or call start()/stop()."""

    def __init__(self, port: int = 0, **options: Any) -> None:
        self.options = Options(**options)
        self.port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.lock = threading.Lock()
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, JSON] = {}
        self.access_tokens: dict[str, Grant] = {}
        self.refresh_tokens: dict[str, Grant] = {}
        self.revoked: list[str] = []
        self.jags: dict[str, str] = {}
        #: Device code -> its grant and how many times it was polled.
        self.device_codes: dict[str, JSON] = {}
        self.requests: list[JSON] = []
        self.issued: list[str] = []  # every secret handed out (canaries)
        #: Who the browser is signed in as: authorization codes (and their tokens) are this user's.
        self.user = "alice"
        for cid, secret in self.options.clients.items():
            method = "client_secret_basic" if secret else "none"
            self.clients[cid] = Client(cid, secret, [], method)

    # -- lifecycle
    def start(self) -> OAuthServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-oauth", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OAuthServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses
    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def issuer(self) -> str:
        return self.base

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def resource(self) -> str:
        return self.options.prm_resource or self.mcp_url

    def paths(self, method: str | None = None) -> list[str]:
        return [r["path"] for r in self.requests if method is None or r["method"] == method]

    def count(self, path: str) -> int:
        return sum(1 for r in self.requests if r["path"] == path)

    def token_requests(self, grant_type: str | None = None) -> list[JSON]:
        return [
            r for r in self.requests
            if r["path"] == "/token" and (grant_type is None or r["form"].get("grant_type") == grant_type)
        ]

    # -- documents
    def prm(self) -> JSON:
        doc: JSON = {"resource": self.resource, "authorization_servers": [self.issuer]}
        if self.options.scopes_supported is not None:
            doc["scopes_supported"] = self.options.scopes_supported
        return doc

    def as_metadata(self) -> JSON:
        o = self.options
        doc: JSON = {
            "issuer": o.metadata_issuer or self.issuer,
            "authorization_endpoint": o.authorization_endpoint or f"{self.base}/authorize",
            "token_endpoint": f"{self.base}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": o.auth_methods,
        }
        if o.registration:
            doc["registration_endpoint"] = f"{self.base}/register"
        if o.revocation:
            doc["revocation_endpoint"] = f"{self.base}/revoke"
        if o.pkce_methods is not None:
            doc["code_challenge_methods_supported"] = o.pkce_methods
        if o.iss_supported is not None:
            doc["authorization_response_iss_parameter_supported"] = o.iss_supported
        if o.as_scopes_supported is not None:
            doc["scopes_supported"] = o.as_scopes_supported
        if o.cimd:
            doc["client_id_metadata_document_supported"] = True
        if o.device:
            doc["device_authorization_endpoint"] = f"{self.base}/device"
            doc["grant_types_supported"].append(DEVICE_CODE)
        return doc

    # -- token issuing
    def issue(
        self, client_id: str, scope: str, resource: str | None, *, refresh: bool, user: str = "alice"
    ) -> JSON:
        access = canary("AT")
        grant = Grant(client_id, scope, resource, time.time() + self.options.access_ttl, user)
        self.access_tokens[access] = grant
        self.issued.append(access)
        out: JSON = {"access_token": access, "token_type": "Bearer", "expires_in": self.options.access_ttl}
        if scope:
            out["scope"] = scope
        if refresh and self.options.issue_refresh:
            rt = canary("RT")
            ttl = self.options.refresh_ttl
            self.refresh_tokens[rt] = Grant(client_id, scope, resource, time.time() + ttl if ttl else 1e12, user)
            self.issued.append(rt)
            out["refresh_token"] = rt
        return out

    def expire_access_tokens(self) -> None:
        with self.lock:
            for grant in self.access_tokens.values():
                grant.expires_at = 0

    def expire_refresh_tokens(self) -> None:
        with self.lock:
            for grant in self.refresh_tokens.values():
                grant.expires_at = 0


class _Handler(BaseHTTPRequestHandler):
    owner: OAuthServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    # -- plumbing
    def _record(self, body: bytes) -> JSON:
        parts = urlsplit(self.path)
        ctype = self.headers.get("Content-Type", "")
        form: dict[str, str] = {}
        doc: Any = None
        if "x-www-form-urlencoded" in ctype:
            form = dict(parse_qsl(body.decode(), keep_blank_values=True))
        elif body:
            try:
                doc = json.loads(body)
            except ValueError:
                doc = None
        rec = {
            "method": self.command,
            "path": parts.path,
            "query": dict(parse_qsl(parts.query, keep_blank_values=True)),
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "form": form,
            "json": doc,
            "raw_target": self.path,
        }
        with self.owner.lock:
            self.owner.requests.append(rec)
        return rec

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-store")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    # -- GET
    def do_GET(self) -> None:
        rec = self._record(b"")
        srv = self.owner
        path = rec["path"]
        if path == srv.options.prm_path and srv.options.prm:
            return self._send(200, srv.prm())
        if path == "/.well-known/oauth-authorization-server" and srv.options.as_metadata:
            return self._send(200, srv.as_metadata())
        if path == "/authorize":
            return self._authorize(rec["query"])
        if path == "/mcp":
            return self._send(405, {"error": "method not allowed"}, {"Allow": "POST"})
        return self._send(404, {"error": "not_found"})

    def _authorize(self, q: dict[str, str]) -> None:
        srv = self.owner
        o = srv.options
        client = srv.clients.get(q.get("client_id", ""))
        cimd = o.cimd and q.get("client_id", "").startswith("https://")
        redirect = q.get("redirect_uri", "")
        if client is None and not cimd:
            return self._send(400, {"error": "invalid_client"})
        if client is not None and client.redirect_uris and not _redirect_ok(redirect, client.redirect_uris):
            return self._send(400, {"error": "invalid_request", "error_description": "redirect_uri mismatch"})
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return self._send(400, {"error": "invalid_request", "error_description": "PKCE S256 required"})
        params: dict[str, str] = {}
        if o.authorize_error:
            params["error"] = o.authorize_error
            params["error_description"] = "the user said <no>"
        else:
            code = canary("CODE")
            srv.issued.append(code)
            with srv.lock:
                srv.codes[code] = {
                    "client_id": q.get("client_id"),
                    "redirect_uri": redirect,
                    "challenge": q.get("code_challenge"),
                    "scope": q.get("scope", ""),
                    "resource": q.get("resource"),
                    "user": srv.user,
                }
            params["code"] = code
        if "state" in q:
            params["state"] = q["state"]
        issuer = o.metadata_issuer or srv.issuer
        if o.iss_mode == "correct":
            params["iss"] = issuer
        elif o.iss_mode == "wrong":
            params["iss"] = "https://evil.example.com"
        elif o.iss_mode == "slash":
            params["iss"] = issuer + "/"
        sep = "&" if "?" in redirect else "?"
        self.send_response(302)
        self.send_header("Location", redirect + sep + urlencode(params))
        self.send_header("Content-Length", "0")
        self.end_headers()

    # -- POST
    def do_POST(self) -> None:
        body = self._body()
        rec = self._record(body)
        path = rec["path"]
        if path == "/register" and self.owner.options.registration:
            return self._register(rec["json"])
        if path == "/token":
            return self._token(rec)
        if path == "/idp/token":
            return self._idp_token(rec)
        if path == "/device" and self.owner.options.device:
            return self._device(rec)
        if path == "/revoke" and self.owner.options.revocation:
            return self._revoke(rec)
        if path == "/mcp":
            return self._mcp(rec)
        return self._send(404, {"error": "not_found"})

    def _register(self, doc: Any) -> None:
        srv = self.owner
        if srv.options.register_response is not None:
            status, raw = srv.options.register_response
            data = raw.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        redirects = doc.get("redirect_uris") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or not (
            isinstance(redirects, list) or (redirects is None and DEVICE_CODE in doc.get("grant_types", []))
        ):
            return self._send(400, {"error": "invalid_client_metadata"})
        method = doc.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in srv.options.auth_methods:
            return self._send(400, {"error": "invalid_client_metadata", "error_description": "auth method"})
        cid = f"client-{uuid.uuid4().hex[:12]}"
        secret = canary("CS") if method != "none" else None
        if secret:
            srv.issued.append(secret)
        with srv.lock:
            srv.clients[cid] = Client(cid, secret, list(redirects or []), method, doc)
        out: JSON = {"client_id": cid, "token_endpoint_auth_method": method, **doc}
        if secret:
            out["client_secret"] = secret
        self._send(201, out)

    def _authenticate(self, rec: JSON) -> Client | None:
        srv = self.owner
        form = rec["form"]
        auth = rec["headers"].get("authorization", "")
        if auth.startswith("Basic "):
            raw = base64.b64decode(auth[6:]).decode()
            cid, _, secret = raw.partition(":")
            cid, secret = unquote(cid), unquote(secret)
            client = srv.clients.get(cid)
            if client is None or client.secret != secret:
                return None
            return client
        cid = form.get("client_id", "")
        if "client_assertion" in form:
            return self._verify_assertion(cid, form)
        client = srv.clients.get(cid)
        if client is None:
            if srv.options.cimd and cid.startswith("https://"):
                return Client(cid, None, [], "none")
            return None
        if client.secret is not None and form.get("client_secret") != client.secret:
            return None
        return client

    def _verify_assertion(self, cid: str, form: dict[str, str]) -> Client | None:
        """private_key_jwt: verify the signature and claims with the registered public key."""
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, utils

        srv = self.owner
        pem = srv.options.jwt_clients.get(cid)
        if pem is None or form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            return None
        try:
            head, payload, sig = form["client_assertion"].split(".")
            pad = lambda x: x + "=" * (-len(x) % 4)  # noqa: E731
            claims = json.loads(base64.urlsafe_b64decode(pad(payload)))
            raw = base64.urlsafe_b64decode(pad(sig))
            key = serialization.load_pem_public_key(pem.encode())
            assert isinstance(key, ec.EllipticCurvePublicKey)
            r = int.from_bytes(raw[:32], "big")
            s_ = int.from_bytes(raw[32:], "big")
            key.verify(utils.encode_dss_signature(r, s_), f"{head}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
        except Exception:
            return None
        if claims.get("iss") != cid or claims.get("sub") != cid or claims.get("aud") != srv.issuer:
            return None
        if claims.get("exp", 0) < time.time():
            return None
        return Client(cid, None, [], "private_key_jwt")

    def _token(self, rec: JSON) -> None:
        srv = self.owner
        if srv.options.token_gate is not None:
            srv.options.token_gate.wait(30)
        form = rec["form"]
        client = self._authenticate(rec)
        if client is None:
            return self._send(401, {"error": "invalid_client"})
        grant = form.get("grant_type")
        with srv.lock:
            if grant == "authorization_code":
                code = srv.codes.pop(form.get("code", ""), None)  # single use
                if code is None or code["client_id"] != client.client_id:
                    return self._send(400, {"error": "invalid_grant", "error_description": "bad code"})
                if code["redirect_uri"] != form.get("redirect_uri"):
                    return self._send(400, {"error": "invalid_grant", "error_description": "redirect_uri"})
                if s256(form.get("code_verifier", "")) != code["challenge"]:
                    return self._send(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
                if form.get("resource") != code["resource"]:
                    return self._send(400, {"error": "invalid_target"})
                out = srv.issue(client.client_id, code["scope"], code["resource"], refresh=True, user=code["user"])
                return self._send(200, out)
            if grant == "refresh_token" and srv.options.refresh_error_echo:
                return self._send(400, {"error": "invalid_grant",
                                        "error_description": f"unknown token {form.get('refresh_token')}"})
            if grant == "refresh_token":
                rt = form.get("refresh_token", "")
                old = srv.refresh_tokens.get(rt)
                if old is None or old.client_id != client.client_id or old.expires_at < time.time():
                    return self._send(400, {"error": "invalid_grant", "error_description": "refresh token expired"})
                if srv.options.rotate_refresh:
                    del srv.refresh_tokens[rt]
                out = srv.issue(client.client_id, old.scope, form.get("resource") or old.resource,
                                refresh=srv.options.rotate_refresh, user=old.user)
                return self._send(200, out)
            if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
                resource = srv.jags.pop(form.get("assertion", ""), None)
                if resource is None or resource != form.get("resource"):
                    return self._send(400, {"error": "invalid_grant"})
                out = srv.issue(client.client_id, form.get("scope", ""), resource, refresh=False)
                return self._send(200, out)
            if grant == DEVICE_CODE:
                return self._device_token(client, form)
            if grant == "client_credentials":
                out = srv.issue(client.client_id, form.get("scope", ""), form.get("resource"), refresh=False)
                return self._send(200, out)
        return self._send(400, {"error": "unsupported_grant_type"})

    def _device(self, rec: JSON) -> None:
        """RFC 8628 3.1-3.2: a device code (a canary) and a user code for the client."""
        srv = self.owner
        client = self._authenticate(rec)
        if client is None:
            return self._send(401, {"error": "invalid_client"})
        form = rec["form"]
        code, user_code = canary("DC"), f"WDJB-{len(srv.device_codes):04d}"
        srv.issued.append(code)
        with srv.lock:
            srv.device_codes[code] = {"client_id": client.client_id, "scope": form.get("scope", ""),
                                      "resource": form.get("resource"), "user_code": user_code, "polls": 0}
        self._send(200, {"device_code": code, "user_code": user_code,
                         "verification_uri": srv.options.device_verification_uri or f"{srv.base}/device/verify",
                         "verification_uri_complete": f"{srv.base}/device/verify?user_code={user_code}",
                         "expires_in": 600, "interval": srv.options.device_interval})

    def _device_token(self, client: Client, form: dict[str, str]) -> None:
        """RFC 8628 3.4-3.5, under the server's lock: pending until the person acts."""
        srv, o = self.owner, self.owner.options
        entry = srv.device_codes.get(form.get("device_code", ""))
        if entry is None or entry["client_id"] != client.client_id:
            return self._send(400, {"error": "invalid_grant"})
        if form.get("resource") != entry["resource"]:
            return self._send(400, {"error": "invalid_target"})
        entry["polls"] += 1
        if entry["polls"] <= o.device_slow_downs:
            return self._send(400, {"error": "slow_down"})
        if entry["polls"] < o.device_approve_at + o.device_slow_downs:
            return self._send(400, {"error": "authorization_pending"})
        if o.device_outcome == "deny":
            return self._send(400, {"error": "access_denied"})
        if o.device_outcome == "expire":
            return self._send(400, {"error": "expired_token"})
        del srv.device_codes[form["device_code"]]  # single use
        return self._send(200, srv.issue(client.client_id, entry["scope"], entry["resource"], refresh=True))

    def _idp_token(self, rec: JSON) -> None:
        """An enterprise IdP: RFC 8693 exchange of an ID token for an ID-JAG (SEP-990)."""
        srv = self.owner
        form = rec["form"]
        if (
            form.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange"
            or form.get("subject_token") != "ID-TOKEN-CANARY"
            or form.get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag"
            or form.get("audience") != srv.issuer
        ):
            return self._send(400, {"error": "invalid_request"})
        jag = canary("JAG")
        with srv.lock:
            srv.jags[jag] = form.get("resource", "")
        srv.issued.append(jag)
        self._send(200, {"access_token": jag, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                         "token_type": "N_A"})

    def _revoke(self, rec: JSON) -> None:
        srv = self.owner
        if self._authenticate(rec) is None:
            return self._send(401, {"error": "invalid_client"})
        token = rec["form"].get("token", "")
        with srv.lock:
            srv.revoked.append(token)
            srv.access_tokens.pop(token, None)
            srv.refresh_tokens.pop(token, None)
        self._send(200)

    # -- the MCP endpoint
    def _challenge(self, status: int, *, error: str | None = None, scope: str | None = None) -> None:
        srv = self.owner
        parts = []
        if error:
            parts.append(f'error="{error}"')
        if scope:
            parts.append(f'scope="{scope}"')
        if srv.options.prm_in_header and srv.options.prm:
            parts.append(f'resource_metadata="{srv.base}{srv.options.prm_path}"')
        header = "Bearer " + ", ".join(parts) if parts else "Bearer"
        self._send(status, {"error": error or "unauthorized"}, {"WWW-Authenticate": header})

    def _mcp(self, rec: JSON) -> None:
        srv = self.owner
        auth = rec["headers"].get("authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        grant = srv.access_tokens.get(token or "")
        if not srv.options.require_auth:
            grant = Grant("anonymous", "", srv.resource, 1e12)
        if grant is None or grant.expires_at < time.time() or grant.resource != srv.resource:
            return self._challenge(401, error="invalid_token" if token else None, scope=srv.options.challenge_scope)
        msg = rec["json"]
        if not isinstance(msg, dict):
            return self._send(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}})
        method = msg.get("method")
        mid = msg.get("id")
        if mid is None:
            return self._send(202)
        if method == "tools/call" and srv.options.always_insufficient:
            return self._challenge(403, error="insufficient_scope", scope=srv.options.always_insufficient)
        writes = method == "tools/call" and (msg.get("params") or {}).get("name") == "write"
        if writes and "mcp:write" not in grant.scope.split():
            return self._challenge(403, error="insufficient_scope", scope="mcp:write")
        result: Any
        if method == "initialize":
            requested = (msg.get("params") or {}).get("protocolVersion")
            version = requested if requested in ("2025-03-26", "2025-06-18", "2025-11-25") else "2025-06-18"
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-oauth-mcp", "version": "1.0"},
            }
        elif method == "tools/list":
            result = {"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}},
                {"name": "write", "inputSchema": {"type": "object"}},
            ]}
        elif method == "tools/call":
            name = (msg.get("params") or {}).get("name")
            result = {"content": [{"type": "text", "text": f"called {name} as {grant.user}"}]}
        elif method == "ping":
            result = {}
        else:
            return self._send(200, {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
        self._send(200, {"jsonrpc": "2.0", "id": mid, "result": result})


def _redirect_ok(uri: str, registered: list[str]) -> bool:
    """Exact match, except any port on a loopback redirect (RFC 8252 §7.3)."""
    if uri in registered:
        return True
    u = urlsplit(uri)
    for reg in registered:
        r = urlsplit(reg)
        if (u.scheme, u.hostname, u.path) == (r.scheme, r.hostname, r.path) and u.hostname in ("127.0.0.1", "::1"):
            return True
    return False


if __name__ == "__main__":  # pragma: no cover - manual use
    import sys

    with OAuthServer(int(sys.argv[1]) if len(sys.argv) > 1 else 0) as s:
        print(f"MCP endpoint: {s.mcp_url}", flush=True)
        threading.Event().wait()
