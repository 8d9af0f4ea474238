"""`mcp servers trust` and `untrust`: consent, remembered per project file, for its servers
to run (`mcpcli.trust`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Command, pass_app
from mcpcli.cli._options import output_options
from mcpcli.errors import UsageError
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.other_clients import ProjectFile

__all__ = ["trust", "untrust"]

JSON = dict[str, Any]


def _trust_line(item: ProjectFile) -> str:
    return f"{item.path} ({item.label}): {', '.join(item.servers)}"


@click.command("trust", context_settings=CONTEXT_SETTINGS, cls=Command)
@click.argument("path", required=False, type=click.Path(exists=True))
@output_options
@pass_app
def trust(app: App, path: str | None, out: Output) -> None:
    """Let the servers of a project's files run (remembered per file and content).

    \b
    A project file (.mcp.json, .cursor/mcp.json, .vscode/mcp.json,
    .codex/config.toml, .gemini/settings.json, opencode.json) comes with a
    repository, so its servers do not run until you trust it. Without PATH:
    every such file read from this directory up; PATH is one file, or a
    directory (the files in it). The servers are remembered as they are
    now: any change to them needs a new trust. Review them first:
      mcp servers list
      mcp servers show NAME
      mcp servers trust
    """
    from pathlib import Path

    from mcpcli import other_clients
    from mcpcli.trust import TRUSTED, TrustStore

    files = other_clients.project_files(path=Path(path) if path else None)
    if not files:
        if path is not None:
            raise UsageError(f"no project file that defines servers at {path}",
                             hint="a project file is .mcp.json, .cursor/mcp.json, .vscode/mcp.json, "
                                  ".codex/config.toml, .gemini/settings.json or opencode.json(c)")
        app.info("no project files define servers here")
    store = TrustStore()
    rows: list[JSON] = []
    for item in files:
        if item.trust != TRUSTED:
            store.allow(item.path, item.digest, item.servers)
        app.info(f"{'already trusted' if item.trust == TRUSTED else 'trusted'} {_trust_line(item)}")
        rows.append({"path": str(item.path), "source": item.source, "servers": item.servers,
                     "sha256": item.digest, "previous": item.trust})
    if any(item.trust != TRUSTED for item in files):
        store.save()
    if not out.human:
        out.emit({"trusted": rows, "store": str(store.path)}, items="trusted")


@click.command("untrust", context_settings=CONTEXT_SETTINGS, cls=Command)
@click.argument("path", required=False, type=click.Path())
@click.option("--all", "every", is_flag=True, help="Forget every project file you trusted, wherever it is.")
@output_options
@pass_app
def untrust(app: App, path: str | None, every: bool, out: Output) -> None:
    """Stop a project's servers from running: forget that you trusted its files.

    \b
    Without PATH: the project files read from this directory up; PATH is one
    file (it may be gone), or a directory (the files in it).
      mcp servers untrust
      mcp servers untrust ~/src/repo
      mcp servers untrust --all
    """
    import os
    from pathlib import Path

    from mcpcli import other_clients
    from mcpcli.trust import TrustStore

    store = TrustStore()
    if every:
        if path is not None:
            raise UsageError("give PATH or --all, not both")
        paths = store.paths()
    else:
        paths = [str(p) for p in other_clients.project_paths(Path(path) if path else None)]
        if path is not None:
            paths.append(os.path.abspath(path))  # a file we no longer read there
    forgotten = [p for p in paths if store.revoke(p)]
    if forgotten:
        store.save()
    for item in forgotten:
        app.info(f"untrusted {item}")
    if not forgotten:
        app.info("nothing trusted " + ("to forget" if every else f"at {path}" if path else "here"))
    if not out.human:
        out.emit({"untrusted": forgotten, "store": str(store.path)}, items="untrusted")
