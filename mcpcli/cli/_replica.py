"""`mcp serve --replica NAME`: one of several replicas behind a load balancer.

Kept apart from serve.py (its size guide): the option stores its value in the click
context's meta, and `serve._http_settings` reads it back, checked, through `replica()`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from mcpcli.errors import UsageError

__all__ = ["replica", "replica_option"]

_REPLICA_KEY = "mcpcli.serve.replica"


def replica_option(command: Callable[..., None]) -> Callable[..., None]:
    """--replica NAME, kept in the click context's meta for `_http_settings` (so `serve()`
    stays within the size guide)."""

    @functools.wraps(command)
    def wrapper(*args: Any, replica: str | None, **kwargs: Any) -> None:
        click.get_current_context().meta[_REPLICA_KEY] = replica
        command(*args, **kwargs)

    return click.option(
        "--replica", metavar="NAME",
        help="With --http, one of several replicas behind a load balancer: start this replica's "
             "2025-era session ids with 'NAME.', so the balancer can route each session to the "
             "replica that holds it (letters, digits, '-', '_').")(wrapper)


def replica(http: str | None) -> str | None:
    """--replica checked: HTTP only, and a name that is safe in a session id and in a load
    balancer's pattern."""
    ctx = click.get_current_context(silent=True)
    name = None if ctx is None else ctx.meta.get(_REPLICA_KEY)
    if name is None:
        return None
    if http is None:
        raise UsageError("--replica applies to --http only")
    import re

    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
        raise UsageError(f"--replica {name!r}: use 1 to 64 letters, digits, '-' or '_'")
    return str(name)
