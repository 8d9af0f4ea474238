"""RFC 6570 URI templates, for string values: a resource template's variables, and the URI
they expand to (what `mcp resources read` is then given). Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote

__all__ = ["expand", "variables"]

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
#: operator -> (first, separator, named, empty-value suffix for named, reserved characters allowed)
_OPERATORS: dict[str, tuple[str, str, bool, str, bool]] = {
    "": ("", ",", False, "", False),
    "+": ("", ",", False, "", True),
    "#": ("#", ",", False, "", True),
    ".": (".", ".", False, "", False),
    "/": ("/", "/", False, "", False),
    ";": (";", ";", True, "", False),
    "?": ("?", "&", True, "=", False),
    "&": ("&", "&", True, "=", False),
}
_UNRESERVED = "-._~"
_RESERVED = ":/?#[]@!$&'()*+,;="


def _varspecs(expression: str) -> tuple[str, list[tuple[str, int | None]]]:
    op = expression[:1] if expression[:1] in _OPERATORS and expression[:1] != "" else ""
    body = expression[len(op):]
    specs: list[tuple[str, int | None]] = []
    for spec in body.split(","):
        spec = spec.strip().rstrip("*")
        name, _, prefix = spec.partition(":")
        if name:
            specs.append((name, int(prefix) if prefix.isdigit() else None))
    return op, specs


def variables(template: str) -> list[str]:
    """The variable names of `template`, each once, in order."""
    names: list[str] = []
    for match in _EXPRESSION.finditer(template):
        for name, _ in _varspecs(match.group(1))[1]:
            if name not in names:
                names.append(name)
    return names


def _encode(value: str, reserved: bool) -> str:
    if not reserved:
        return quote(value, safe=_UNRESERVED)
    # Reserved expansion keeps reserved characters and existing %XX escapes.
    out = []
    for part in re.split(r"(%[0-9A-Fa-f]{2})", value):
        out.append(part if re.fullmatch(r"%[0-9A-Fa-f]{2}", part) else quote(part, safe=_UNRESERVED + _RESERVED))
    return "".join(out)


def expand(template: str, values: Mapping[str, str]) -> str:
    """`template` with each expression replaced; an undefined variable is left out."""

    def one(match: re.Match[str]) -> str:
        op, specs = _varspecs(match.group(1))
        first, sep, named, empty, reserved = _OPERATORS[op]
        parts: list[str] = []
        for name, prefix in specs:
            if name not in values:
                continue
            value = values[name]
            if prefix is not None:
                value = value[:prefix]
            encoded = _encode(value, reserved)
            if named:
                parts.append(f"{name}={encoded}" if value else f"{name}{empty}")
            else:
                parts.append(encoded)
        return first + sep.join(parts) if parts else ""

    return _EXPRESSION.sub(one, template)
