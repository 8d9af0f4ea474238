"""`--jq FILTER`: a filter compiled and run by the jq module, and the one line its errors
become.

Shared by `output` (the full path) and the CLI's fast paths (`mcpcli.cli.fast`), so
both print the same values and word the same errors. Nothing is imported until a
filter is compiled (jq costs about 2 ms then).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["compile_filter", "error_message", "values"]


def compile_filter(text: str) -> Any:
    """The compiled filter; raises ValueError (jq's own) when it is invalid."""
    import jq

    return jq.compile(text)


def values(program: Any, value: Any) -> list[Any]:
    """Every output of `program` on `value`; raises ValueError (jq's own) when it fails."""
    return list(program.input_value(value).all())


def error_message(exc: Exception) -> str:
    """jq's first line without its `jq: error:` prefix or the colon that introduced the
    source excerpt on the next lines (`... line 1, column 9:`)."""
    lines = str(exc).strip().splitlines()
    first = lines[0].strip() if lines else "invalid filter"
    first = first.removeprefix("jq: error:").strip()
    return first.removesuffix(":").strip() or "invalid filter"
