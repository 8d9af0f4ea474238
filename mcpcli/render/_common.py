"""Small helpers shared by the renderers: safe text, sizes, tables."""

from __future__ import annotations

from typing import Any

from mcpcli.text import printable

JSON = dict[str, Any]


def _s(value: Any, *, one_line: bool = True, limit: int | None = None) -> str:
    text = printable(str(value if value is not None else ""), keep_newlines=not one_line)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _obj(value: Any) -> JSON:
    """`value` if it is a JSON object, else an empty one (server data is untrusted)."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    """`value` if it is a JSON array, else an empty one (server data is untrusted)."""
    return value if isinstance(value, list) else []


def _first_line(text: Any) -> str:
    """The first line of a description, with `…` when more follows (it was cut)."""
    lines = [line.strip() for line in str(text or "").strip().splitlines()]
    if not lines:
        return ""
    more = any(lines[1:])
    return f"{lines[0]} …" if more else lines[0]


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _table(*columns: str, one_line: bool = False) -> Any:
    """A borderless table; `one_line` keeps each row on one line, the last column cut
    with `…` (wrapping a description can leave one word alone on a line)."""
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for i, name in enumerate(columns):
        if i == 0:
            table.add_column(name, no_wrap=True)
        elif one_line and i == len(columns) - 1:
            table.add_column(name, no_wrap=True, overflow="ellipsis")
        else:
            table.add_column(name, overflow="fold")
    return table


def _duration(ms: Any) -> str:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return "unlimited" if ms is None else "?"
    return f"{ms / 1000:g}s"
