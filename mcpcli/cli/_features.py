"""The client features a command offers servers, built from its flags."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpcli.client import ClientFeatures
from mcpcli.core import jsonrpc
from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.cli._app import App
    from mcpcli.cli._connection import Connection

__all__ = ["build_features", "roots_of"]


def roots_of(dirs: tuple[str, ...]) -> list[dict[str, Any]] | None:
    """--root DIRs as MCP roots (file URIs); None when there are none."""
    if not dirs:
        return None
    roots = []
    for d in dirs:
        path = Path(d).expanduser().resolve()
        if not path.is_dir():
            raise UsageError(f"--root {d}: not a directory")
        roots.append({"uri": path.as_uri(), "name": path.name or str(path)})
    return roots


def build_features(app: App, conn: Connection) -> ClientFeatures:
    from mcpcli.cli import _elicit

    if conn.elicit_json is not None and conn.elicit_defaults:
        raise UsageError("--elicit-json and --elicit-defaults cannot be used together")
    interactive = app.stdin_tty and app.stderr_tty if conn.interactive is None else conn.interactive
    if conn.elicit_json is not None:
        try:
            content = jsonrpc.loads(conn.elicit_json)
        except ValueError as exc:
            raise UsageError(f"--elicit-json: invalid JSON: {exc}") from None
        if not isinstance(content, dict):
            raise UsageError("--elicit-json must be a JSON object")
        elicit = _elicit.fixed_answer(content, app)
    elif conn.elicit_defaults:
        elicit = _elicit.defaults_answer(app)
    elif interactive:
        elicit = _elicit.prompter(app)
    else:
        elicit = _elicit.decline_with_notice(app)
    sample = None
    if conn.sampling_command:
        from mcpcli.sampling import command_sampler

        sample = command_sampler(conn.sampling_command)
    return ClientFeatures(
        elicit=elicit, sample=sample, roots=roots_of(conn.root), elicit_url=interactive
    )
