"""`private_key_jwt` client assertions (RFC 7523 §2.2, RFC 7521).

Signing needs `cryptography` (the `jwt` extra; on Linux keyring brings it), imported
only here and only when a machine client authenticates with a private key.
"""

from __future__ import annotations

import json
import secrets
import time
from types import ModuleType
from typing import Any

from mcpcli.auth.pkce import b64url
from mcpcli.errors import UsageError, optional_import

__all__ = ["ASSERTION_TYPE", "sign_client_assertion"]

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_EC_ALGS = {"ES256": ("SHA256", 32), "ES384": ("SHA384", 48), "ES512": ("SHA512", 66)}
_RSA_ALGS = {"RS256": "SHA256", "RS384": "SHA384", "RS512": "SHA512", "PS256": "SHA256",
             "PS384": "SHA384", "PS512": "SHA512"}


def _crypto(name: str) -> ModuleType:
    """`cryptography.hazmat.primitives.NAME`, or MissingExtra naming the `jwt` extra."""
    return optional_import(f"cryptography.hazmat.primitives.{name}", extra="jwt", feature="private_key_jwt",
                           package="cryptography")


def _load_key(pem: str) -> Any:
    serialization = _crypto("serialization")
    try:
        return serialization.load_pem_private_key(pem.encode("utf-8"), password=None)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"the private key is not a usable unencrypted PEM key: {exc}") from None


def default_alg(key: Any) -> str:
    ec, ed25519, rsa = (_crypto(f"asymmetric.{name}") for name in ("ec", "ed25519", "rsa"))

    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}.get(key.curve.name, "ES256")
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    raise UsageError("unsupported private key type (use an EC, RSA or Ed25519 key)")


def _sign(key: Any, alg: str, data: bytes) -> bytes:
    hashes = _crypto("hashes")
    ec, ed25519, padding, rsa, utils = (_crypto(f"asymmetric.{name}")
                                        for name in ("ec", "ed25519", "padding", "rsa", "utils"))
    if alg in _EC_ALGS:
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise UsageError(f"{alg} needs an EC private key")
        hash_name, size = _EC_ALGS[alg]
        der = key.sign(data, ec.ECDSA(getattr(hashes, hash_name)()))
        r, s = utils.decode_dss_signature(der)
        return bytes(r.to_bytes(size, "big") + s.to_bytes(size, "big"))
    if alg in _RSA_ALGS:
        if not isinstance(key, rsa.RSAPrivateKey):
            raise UsageError(f"{alg} needs an RSA private key")
        digest = getattr(hashes, _RSA_ALGS[alg])()
        if alg.startswith("PS"):
            pad: Any = padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size)
        else:
            pad = padding.PKCS1v15()
        return bytes(key.sign(data, pad, digest))
    if alg == "EdDSA":
        if not isinstance(key, ed25519.Ed25519PrivateKey):
            raise UsageError("EdDSA needs an Ed25519 private key")
        return bytes(key.sign(data))
    raise UsageError(f"unsupported signing algorithm {alg!r}")


def sign_client_assertion(
    *, client_id: str, audience: str, private_key_pem: str, alg: str | None = None,
    lifetime: int = 300,
) -> str:
    """A signed JWT with iss = sub = client_id, aud, iat, exp and a random jti."""
    key = _load_key(private_key_pem)
    alg = alg or default_alg(key)
    now = int(time.time())
    header = {"alg": alg, "typ": "JWT"}
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + lifetime,
        "jti": secrets.token_urlsafe(16),
    }
    signing_input = (
        b64url(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + b64url(json.dumps(claims, separators=(",", ":")).encode())
    )
    signature = _sign(key, alg, signing_input.encode("ascii"))
    return f"{signing_input}.{b64url(signature)}"
