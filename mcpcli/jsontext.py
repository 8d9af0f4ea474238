"""JSON text as mcpcli reads and writes it, on `json` alone.

`loads` is strict: no NaN, Infinity or 1e999 (Python's extensions would decode them, and
they could never be written back with `allow_nan=False`), and a nesting deeper than the
parser's recursion allows ("[[[[...") is a ValueError like any other JSON it will not
take. `dumps` is compact, one line (JSON escapes every newline), and `utf8` is that line
as bytes, a lone surrogate (a peer's "\\ud800", echoed back) written as the same JSON
escape since it has no UTF-8 form.

The one reader and writer for JSON that crosses a process boundary: JSON-RPC messages
(`mcpcli.core.jsonrpc`) and the local line protocols (`mcpcli.core.localrpc`), which the
fast paths load before anything else, so nothing heavier than `json` is imported here.
"""

from __future__ import annotations

import json
import math

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["decoder", "dumps", "loads", "utf8"]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


#: The strict decoder (see the module's doc); `decoder.decode` raises RecursionError on
#: deep nesting, which `loads` turns into a ValueError.
decoder = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ascii_encoder = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def loads(text: str | bytes) -> Any:
    """Strict JSON text (see the module's doc); bytes are decoded as `json.loads` decodes
    them (bad UTF-8 is a ValueError as well)."""
    try:
        if not isinstance(text, str):
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        return decoder.decode(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def dumps(value: Any) -> str:
    """Compact JSON text on one line; ValueError for NaN or an infinity."""
    return _encoder.encode(value)


def utf8(value: Any) -> bytes:
    """`dumps(value)` as UTF-8, a lone surrogate escaped (`\\udXXX`: the same string to a reader)."""
    try:
        return _encoder.encode(value).encode("utf-8")
    except UnicodeEncodeError:
        return _ascii_encoder.encode(value).encode("ascii")
