"""`mcp serve FILE`: serve a tools.yaml file over stdio or Streamable HTTP."""

from __future__ import annotations

import os
import stat
from typing import Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, pass_app
from mcpcli.errors import ConfigError, ExitCode, UsageError

__all__ = ["parse_http_address", "serve"]

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def parse_http_address(value: str) -> tuple[str, int]:
    """`[HOST:]PORT` -> (host, port); host defaults to 127.0.0.1."""
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", value
    host = host or "127.0.0.1"
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"--http {value!r}: expected [HOST:]PORT, e.g. 8080 or 127.0.0.1:8080") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"--http {value!r}: the port must be between 0 and 65535")
    return host, port


def _print_problems(app: App, exc: ConfigError) -> None:
    problems = getattr(exc, "problems", None)
    if problems:
        for problem in problems:
            app.stderr.write(f"{problem}\n")
    else:
        app.stderr.write(f"{app.prog}: error: {exc.message}\n")
    app.stderr.flush()


def _check_watch_safety(path: str) -> None:
    """--watch turns "can write this file" into "can run code": refuse world-writable files."""
    for target in (path, os.path.dirname(os.path.abspath(path))):
        try:
            mode = os.stat(target).st_mode
        except OSError:
            continue
        if mode & stat.S_IWOTH and not (stat.S_ISDIR(mode) and mode & stat.S_ISVTX):
            raise UsageError(
                f"--watch: {target} is writable by every user, so anyone could change what runs",
                hint=f"chmod o-w {target}",
            )


@click.command("serve", context_settings=CONTEXT_SETTINGS)
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--http", "http", metavar="[HOST:]PORT",
              help="Serve Streamable HTTP (and legacy HTTP+SSE) at http://HOST:PORT/mcp instead of "
                   "stdio. HOST defaults to 127.0.0.1.")
@click.option("--auth-token", envvar="MCP_SERVE_TOKEN", metavar="TOKEN",
              help="Require 'Authorization: Bearer TOKEN' on HTTP (required beyond loopback; "
                   "prefer the MCP_SERVE_TOKEN variable).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also accept this Host header on HTTP (a reverse proxy's public name); "
                   "repeatable, '*' for any. Loopback names are always accepted on a loopback bind.")
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
              help="Also accept requests from this browser Origin (https://app.example); "
                   "repeatable, '*' for any. Loopback origins are accepted by default.")
@click.option("--check", is_flag=True, help="Validate FILE and exit: 0 if valid, 2 with file:line:col errors.")
@click.option("--watch", is_flag=True,
              help="Reload FILE when it changes and announce list_changed; an invalid change keeps "
                   "the last good version.")
@click.option("--print-schema", is_flag=True,
              help="Print the JSON Schema of the tools.yaml format and exit.")
@click.option("--example", is_flag=True,
              help="Use the bundled example tools.yaml as FILE (see --print-example).")
@click.option("--print-example", is_flag=True, help="Print the bundled example tools.yaml and exit.")
@click.option("--quiet", "-q", is_flag=True, help="No log line per call on stderr.")
@pass_app
def serve(
    app: App,
    file: str | None,
    http: str | None,
    auth_token: str | None,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    check: bool,
    watch: bool,
    print_schema: bool,
    example: bool,
    print_example: bool,
    quiet: bool,
) -> None:
    """Serve a tools.yaml file as an MCP server (stdio unless --http).

    \b
    Every call runs its command in its own process group, with a closed
    environment and no shell unless the tool opts in. Examples:
      mcp serve tools.yaml                      # stdio, for a client config
      mcp serve tools.yaml --http 8080          # http://127.0.0.1:8080/mcp
      mcp serve --check tools.yaml              # validate only
      mcp tools list tools.yaml                 # try it without a server
    Exit status: 0 served until EOF/Ctrl-C; 2 invalid FILE or flags; 4 cannot listen.
    """
    from mcpcli import serve as serve_pkg

    if print_schema:
        app.stdout.write(serve_pkg.schema_text())
        app.stdout.flush()
        return
    if print_example:
        with open(serve_pkg.example_path(), encoding="utf-8") as fh:
            app.stdout.write(fh.read())
        app.stdout.flush()
        return
    if example:
        if file is not None:
            raise UsageError("give FILE or --example, not both")
        file = serve_pkg.example_path()
    if file is None:
        raise UsageError("missing FILE", hint="mcp serve tools.yaml (or --example, --print-schema)")

    from mcpcli.serve.load import load_config

    try:
        config = load_config(file)
    except ConfigError as exc:
        _print_problems(app, exc)
        app.exit_code = ExitCode.USAGE
        return
    for warning in config.warnings:
        app.stderr.write(warning.format("warning") + "\n")
    if check:
        counts = (f"{len(config.tools)} tool{'s' * (len(config.tools) != 1)}, "
                  f"{len(config.resources)} resource{'s' * (len(config.resources) != 1)}, "
                  f"{len(config.prompts)} prompt{'s' * (len(config.prompts) != 1)}")
        app.info(f"{file}: valid ({counts})")
        return
    if watch:
        _check_watch_safety(file)
    address = parse_http_address(http) if http is not None else None
    if (allow_hosts or allow_origins) and address is None:
        raise UsageError("--allow-host and --allow-origin apply to --http only")
    if address is not None and address[0] not in LOOPBACK and not auth_token:
        raise UsageError(
            f"--http {http}: binding beyond loopback needs --auth-token (or MCP_SERVE_TOKEN)",
            hint="anyone who can reach the port could run the tools",
        )

    from mcpcli.serve.backend import ToolsBackend

    def warn(line: str) -> None:
        app.stderr.write(f"{app.prog} serve: {line}\n")
        app.stderr.flush()

    backend = ToolsBackend(file, log=None if quiet else warn, warn=warn, config=config)

    async def run() -> None:
        import anyio

        from mcpcli.server import Server

        # With --watch the lists can change at any time: keep 2026 cache hints short.
        server = Server(backend, list_ttl_ms=5_000) if watch else Server(backend)
        async with anyio.create_task_group() as tg:
            if watch:
                tg.start_soon(backend.watch)
            if address is None:
                from mcpcli.server import serve_stdio

                await serve_stdio(server)
            else:
                await _serve_http(
                    app, server, address, auth_token, file, allow_hosts, allow_origins
                )
            tg.cancel_scope.cancel()

    try:
        app.run(run)
    finally:
        backend.close()


async def _serve_http(
    app: App,
    server: Any,
    address: tuple[str, int],
    token: str | None,
    file: str,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
) -> None:
    from mcpcli.server import serve_http
    from mcpcli.server.http import LOOPBACK_NAMES, is_loopback

    host, port = address

    def ready(url: str) -> None:
        app.info(f"serving {file} at {url}")

    hosts = None
    if allow_hosts:
        # Extra names add to what the bind already accepts; they never replace loopback.
        base = LOOPBACK_NAMES if is_loopback(host) else (*LOOPBACK_NAMES, host)
        hosts = (*base, *allow_hosts)
    origins = None
    if allow_origins:
        origins = (*LOOPBACK_NAMES, *allow_origins)
    await serve_http(
        server, host=host, port=port, auth_token=token, on_ready=ready,
        allowed_hosts=hosts, allowed_origins=origins,
    )
