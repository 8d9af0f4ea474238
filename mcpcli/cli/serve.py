"""`mcp serve FILE`: serve a tools.yaml file over stdio or Streamable HTTP."""

from __future__ import annotations

import functools
import math
import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Command, pass_app
from mcpcli.cli._options import project_option
from mcpcli.cli._replica import replica, replica_option
from mcpcli.cli._serve_tasks import task_flags, task_options
from mcpcli.cli._types import seconds
from mcpcli.errors import ConfigError, ExitCode, UsageError

if TYPE_CHECKING:
    from mcpcli.gateway.check import Reached
    from mcpcli.toolsfile.model import ToolsFile, Upstream
    from mcpcli.toolsfile.yamlstrict import Problem

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


@dataclass(frozen=True)
class _Http:
    """The --http flags, checked."""

    host: str
    port: int
    token: str | None
    #: The token was made up at start (none was given): show it once, with how to use it.
    generated: bool
    allow_hosts: tuple[str, ...]
    allow_origins: tuple[str, ...]
    sse_poll_after: float | None
    replica: str | None = None  # --replica NAME: legacy session ids start with "NAME."


@click.command("serve", context_settings=CONTEXT_SETTINGS, cls=Command)
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--http", "http", metavar="[HOST:]PORT",
              help="Serve Streamable HTTP (and legacy HTTP+SSE) at http://HOST:PORT/mcp instead of "
                   "stdio. HOST defaults to 127.0.0.1.")
@click.option("--auth-token", envvar="MCP_SERVE_TOKEN", metavar="TOKEN",
              help="Require 'Authorization: Bearer TOKEN' on HTTP (prefer the MCP_SERVE_TOKEN "
                   "variable). Without it a random token is made and shown on stderr.")
@click.option("--no-auth", is_flag=True,
              help="With --http on loopback: serve without a token, so any local user or process "
                   "can call the tools.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also accept this Host header on HTTP (a reverse proxy's public name); "
                   "repeatable, '*' for any. Loopback names are always accepted on a loopback bind.")
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
              help="Also accept requests from this browser Origin (https://app.example); "
                   "repeatable, '*' for any. Loopback origins are accepted by default.")
@click.option("--sse-poll-after", type=seconds(), metavar="SECONDS",
              help="With --http: when a 2025-11-25 client's call streams over SSE and has not "
                   "answered after SECONDS, close the stream (after an event id and a retry hint); "
                   "the client resumes with GET and Last-Event-ID and gets the rest there "
                   "(SSE polling, SEP-1699). Default: streams stay open.")
@replica_option
@task_options
@click.option("--check", is_flag=True, help="Validate FILE and exit: 0 if valid, 2 with file:line:col errors.")
@click.option("--connect", is_flag=True,
              help="With --check: also reach each upstream under servers: (initialize and lists, "
                   "in parallel) and report failures and name collisions.")
@click.option("--watch", is_flag=True,
              help="Reload FILE when it changes and announce list_changed; an invalid change keeps "
                   "the last good version.")
@click.option("--print-schema", is_flag=True,
              help="Print the JSON Schema of the tools.yaml format and exit.")
@click.option("--example", is_flag=True,
              help="Use the bundled example tools.yaml as FILE (see --print-example).")
@click.option("--print-example", is_flag=True, help="Print the bundled example tools.yaml and exit.")
@click.option("--quiet", "-q", is_flag=True, help="No log line per call on stderr.")
@click.option("--proxy", is_flag=False, flag_value="", metavar="TARGET",
              help="Serve another MCP server through this one instead of FILE: a configured name, "
                   "a URL (signed in with our OAuth client), a tools.yaml, or a command after --.")
@click.option("--allow-tool", "allow_tools", multiple=True, metavar="GLOB",
              help="With --proxy: serve only tools matching GLOB (case-insensitive; repeatable).")
@click.option("--deny-tool", "deny_tools", multiple=True, metavar="GLOB",
              help="With --proxy: hide tools matching GLOB, and refuse calls to them as unknown "
                   "(case-insensitive; repeatable; wins over --allow-tool).")
@click.option("--prefix", metavar="P", help="With --proxy: serve the upstream's tools and prompts as P<name>.")
@click.option("--read-only", is_flag=True,
              help="With --proxy: serve only tools annotated readOnlyHint: true.")
@click.option("--replay", type=click.Path(dir_okay=False), metavar="RECORDING",
              help="Serve a --record file as a mock server: requests answered from the "
                   "recording by method and params.")
@click.option("--eager", is_flag=True,
              help="With --proxy or a FILE with servers:, connect to the upstreams at start "
                   "instead of on first use.")
@project_option
@pass_app
def serve(
    app: App, file: str | None, http: str | None, auth_token: str | None, no_auth: bool,
    allow_hosts: tuple[str, ...], allow_origins: tuple[str, ...], sse_poll_after: float | None, check: bool,
    connect: bool, watch: bool, print_schema: bool, example: bool, print_example: bool, quiet: bool,
    proxy: str | None, allow_tools: tuple[str, ...], deny_tools: tuple[str, ...], prefix: str | None,
    read_only: bool, replay: str | None, eager: bool,
) -> None:
    """Serve a tools.yaml file as an MCP server (stdio unless --http).

    \b
    Every call runs its command in its own process group, with a closed
    environment and no shell unless the tool opts in. Examples:
      mcp serve tools.yaml                      # stdio, for a client config
      mcp serve tools.yaml --http 8080          # http://127.0.0.1:8080/mcp, token on stderr
      mcp serve --check tools.yaml              # validate only
      mcp serve --check --connect tools.yaml    # and reach its servers: too
      mcp tools list tools.yaml                 # try it without a server
      mcp serve --proxy https://mcp.example.com/mcp        # a remote server over stdio
      mcp serve --http 8080 --proxy -- npx -y some-server  # a stdio server over HTTP
      mcp serve --replay session.ndjson         # a recording (--record) as a mock server
    Exit status: 0 served until EOF or stopped by SIGTERM (after a graceful
    shutdown); 130 Ctrl-C (SIGINT; no error line either); 2 invalid FILE or flags (with
    --check --connect: also an upstream that fails or a name collision); 4 cannot listen.
    """
    if _print_only(app, print_schema, print_example):
        return
    if any(name.startswith("OTEL_") for name in os.environ):  # as `run()`, under this service name
        from mcpcli import spans

        spans.configure("mcpcli-serve", app.warn, promptly=http is None)  # stdio: stopped soon after
    if connect and not check:
        raise UsageError("--connect applies to --check only", hint="mcp serve --check --connect FILE")
    settings = functools.partial(_http_settings, http, auth_token, no_auth, allow_hosts, allow_origins, sse_poll_after)
    gateway_flags = {"--allow-tool": allow_tools, "--deny-tool": deny_tools, "--prefix": prefix is not None,
                     "--read-only": read_only, "--eager": eager, "--check": check, "--watch": watch,
                     "--example": example}
    if replay is not None:
        app.signal_stops = True  # a server: a signal is how it stops, not an error
        _serve_replay(app, replay, file, proxy, any(gateway_flags.values()) or connect, settings())
        return
    from mcpcli.cli._proxy import check_proxy_flags

    check_proxy_flags(proxy, app.server_command, file=file, flags=gateway_flags)
    app.signal_stops = not check  # a server: a signal is how it stops, not an error
    if proxy is not None:
        _serve_proxy(app, proxy, settings(), allow_tools, deny_tools, prefix or "", read_only, eager, quiet)
        return
    file = _file_to_serve(file, example)
    config = _load(app, file, check, connect)
    if config is None or check:
        return
    if watch:
        _check_watch_safety(file)
    _serve(app, file, config, settings(), watch=watch, quiet=quiet, eager=eager)


def _print_only(app: App, print_schema: bool, print_example: bool) -> bool:
    """--print-schema and --print-example: print, and say the command is done."""
    from mcpcli import toolsfile

    if print_schema:
        app.stdout.write(toolsfile.schema_text())
    elif print_example:
        with open(toolsfile.example_path(), encoding="utf-8") as fh:
            app.stdout.write(fh.read())
    else:
        return False
    app.stdout.flush()
    return True


def _file_to_serve(file: str | None, example: bool) -> str:
    if example:
        if file is not None:
            raise UsageError("give FILE or --example, not both")
        from mcpcli.toolsfile import example_path

        return example_path()
    if file is None:
        raise UsageError("missing FILE", hint="mcp serve tools.yaml (or --example, --print-schema)")
    return file


def _load(app: App, file: str, check: bool, connect: bool = False) -> ToolsFile | None:
    """The checked file (its warnings printed), or None once its problems are printed (exit 2).

    The targets of `servers:` entries are resolved too (before serving as well), and
    with --connect each upstream is reached."""
    from mcpcli.toolsfile.load import load_config

    try:
        config = load_config(file)
    except ConfigError as exc:
        _print_problems(app, exc)
        app.exit_code = ExitCode.USAGE
        return None
    for warning in config.warnings:
        app.stderr.write(warning.format("warning") + "\n")
    if config.servers and not _servers_ok(app, config, connect=check and connect):
        app.exit_code = ExitCode.USAGE
        return None
    if check:
        app.info(f"{file}: valid ({_counts(config)})")
    return config


def _counts(config: ToolsFile) -> str:
    """What a file serves, counted: "3 tools, 1 resource, 0 prompts" (and its servers)."""
    counts = (f"{len(config.tools)} tool{'s' * (len(config.tools) != 1)}, "
              f"{len(config.resources)} resource{'s' * (len(config.resources) != 1)}, "
              f"{len(config.prompts)} prompt{'s' * (len(config.prompts) != 1)}")
    if config.servers:
        counts += f", {len(config.servers)} server{'s' * (len(config.servers) != 1)}"
    return counts


def _say_stdio_on_a_terminal(app: App, what: str, try_it: list[str] | None) -> None:
    """A person ran a stdio server at a terminal, where it would sit silent (and take a typed
    line for bad JSON-RPC): say what it waits for, how to try it (`try_it`: what `mcp tools
    list` can reach directly, if anything) and how to serve HTTP instead."""
    if not app.stdin_tty:
        return
    from shlex import join

    app.info(f"serving {what} over stdio: waiting for an MCP client to speak JSON-RPC on stdin "
             "(an MCP client's config runs this command; Ctrl-C stops)")
    tried = f"to try it, `{app.prog} tools list {join(try_it)}`; " if try_it else ""
    app.stderr.write(f"{app.prog}: hint: {tried}to serve over HTTP instead, add `--http PORT`\n")
    app.stderr.flush()


def _servers_ok(app: App, config: ToolsFile, *, connect: bool) -> bool:
    """Resolve the `servers:` targets (and with `connect` reach them); print each problem."""
    from mcpcli.gateway.serve_file import check_file_servers

    def reached(item: Reached) -> None:
        up = item.upstream
        app.info(f"{up.file}:{up.line}:{up.col}: server {up.name!r}: reached ({item.summary()})")

    def warning(problem: Problem) -> None:
        app.stderr.write(problem.format("warning") + "\n")

    problems = app.run(lambda: check_file_servers(config, connect=connect, user_config=app.config(),
                                                  on_reached=reached, on_warning=warning))
    for problem in problems:
        app.stderr.write(f"{problem}\n")
    app.stderr.flush()
    return not problems


def _http_settings(http: str | None, token: str | None, no_auth: bool, allow_hosts: tuple[str, ...],
                   allow_origins: tuple[str, ...], sse_poll_after: float | None) -> _Http | None:
    """The checked --http flags; None for stdio (where the HTTP-only flags are usage errors).

    Loopback is no boundary between the users of one machine, so a server without
    a token is only made on request (--no-auth, loopback only); otherwise a random
    token is generated."""
    if http is None:
        if allow_hosts or allow_origins:
            raise UsageError("--allow-host and --allow-origin apply to --http only")
        if sse_poll_after is not None:
            raise UsageError("--sse-poll-after applies to --http only")
        if no_auth:
            raise UsageError("--no-auth applies to --http only")
        replica(None)  # --replica without --http: a usage error
        return None
    host, port = parse_http_address(http)
    if no_auth and token:
        raise UsageError("--no-auth and --auth-token (or MCP_SERVE_TOKEN) contradict each other")
    if host not in LOOPBACK and not token:
        raise UsageError(
            f"--http {http}: binding beyond loopback needs --auth-token (or MCP_SERVE_TOKEN)",
            hint="anyone who can reach the port could run the tools; --no-auth is for loopback only",
        )
    if sse_poll_after is not None and not math.isfinite(sse_poll_after):
        raise UsageError(f"--sse-poll-after {sse_poll_after}: expected a number of seconds")
    generated = not token and not no_auth
    if generated:
        import secrets

        token = secrets.token_urlsafe(32)
    return _Http(host, port, token or None, generated, allow_hosts, allow_origins, sse_poll_after,
                 replica(http))


def _serve(app: App, file: str, config: ToolsFile, http: _Http | None, *, watch: bool, quiet: bool,
           eager: bool) -> None:
    from mcpcli.cli._proxy import gateway_options, stdin_reserved
    from mcpcli.toolsfile.backend import ToolsBackend

    def warn(line: str) -> None:
        app.stderr.write(f"{app.prog} serve: {line}\n")
        app.stderr.flush()

    tasks = task_flags()
    records = tasks.open(file, config, warn)
    backend = ToolsBackend(file, log=None if quiet else warn, warn=warn, config=config)
    options = gateway_options(app, eager=eager, quiet=quiet, stdio=http is None) if config.servers else None

    async def run() -> None:
        import anyio

        from mcpcli.gateway.serve_file import served_backend
        from mcpcli.server import Server

        async with (
            served_backend(backend, watch=watch, options=options) as served,
            anyio.create_task_group() as tg,
        ):
            server = Server(
                served,
                # With --watch the lists can change at any time: keep 2026 cache hints short.
                list_ttl_ms=5_000 if watch else 60_000,
                max_tasks=tasks.max_tasks,
                task_records=records,
                max_tasks_per_principal=tasks.per_client,
                max_task_result=tasks.max_result,
            )
            if watch:
                tg.start_soon(backend.watch)
            if http is None:
                from mcpcli.server import serve_stdio

                await serve_stdio(server, on_eof=app.wind_down)
            else:
                await _serve_http(app, server, http, file)
            tg.cancel_scope.cancel()

    if http is None:
        _say_stdio_on_a_terminal(app, f"{file} ({_counts(config)})", [file])
    try:
        with stdin_reserved(http is None and bool(config.servers)):
            app.run(run)
    finally:
        backend.close()
        records.close()


def _proxied_target_ok(app: App, upstream: Upstream) -> bool:
    """--proxy NAME or FILE: the name resolves (known, and not an untrusted project
    file's), and the file, and those its `servers:` include, load without a cycle
    (checked before serving, as `mcp serve FILE` checks its own); each problem printed."""
    from mcpcli.targets import is_url

    if upstream.target is None or is_url(upstream.target):
        return True
    from mcpcli.gateway.check import check_upstreams

    problems = app.run(lambda: check_upstreams([upstream], connect=False, config=app.config()))
    for problem in problems:
        # The proxied file's own entry has no place in a file: said as the command's error.
        hint = f" ({problem.hint})" if problem.hint else ""
        line = problem.format("error") if problem.file else f"{app.prog} serve: --proxy: {problem.message}{hint}"
        app.stderr.write(line + "\n")
    app.stderr.flush()
    return not problems


def _serve_proxy(app: App, proxy: str, http: _Http | None, allow: tuple[str, ...], deny: tuple[str, ...],
                 prefix: str, read_only: bool, eager: bool, quiet: bool) -> None:
    """`--proxy`: one upstream behind our stdio or HTTP endpoint."""
    from mcpcli.cli._proxy import proxy_upstream, serve_gateway

    upstream = proxy_upstream(proxy, app.server_command, allow=allow, deny=deny, prefix=prefix,
                              read_only=read_only)
    if not _proxied_target_ok(app, upstream):
        app.exit_code = ExitCode.USAGE
        return
    if http is None:
        _say_stdio_on_a_terminal(app, f"{upstream.name} through a gateway",
                                 [proxy] if proxy else ["--", *app.server_command])

    async def serve(server: Any) -> None:
        if http is None:
            from mcpcli.server import serve_stdio

            await serve_stdio(server, on_eof=app.wind_down)
        else:
            await _serve_http(app, server, http, upstream.name)

    serve_gateway(app, [upstream], serve, eager=eager, quiet=quiet, stdio=http is None)


def _serve_replay(app: App, replay: str, file: str | None, proxy: str | None, file_flags: bool,
                  http: _Http | None) -> None:
    """`--replay RECORDING`: a recording served back over stdio or HTTP."""
    if file is not None or proxy is not None or app.server_command:
        raise UsageError("--replay serves a recording: give no FILE, --proxy or server command with it")
    if file_flags:
        raise UsageError("--replay takes no --check, --connect, --watch, --example, --eager or gateway flags")
    from mcpcli.server.replay import ReplayServer, load_recording

    server = ReplayServer(load_recording(replay))
    if http is None:
        _say_stdio_on_a_terminal(app, f"the recording {replay}", ["--", app.prog, "serve", "--replay", replay])

    async def run() -> None:
        if http is None:
            from mcpcli.server import serve_stdio

            await serve_stdio(server)
        else:
            await _serve_http(app, server, http, replay)

    app.run(run)


def _token_help(prog: str, file: str, url: str, token: str) -> str:
    """How to reach a server whose token was generated: shown once on stderr, never stdout."""
    import json

    name = os.path.splitext(os.path.basename(file))[0] or "tools"
    entry = {"mcpServers": {name: {"type": "http", "url": url,
                                   "headers": {"Authorization": f"Bearer {token}"}}}}
    return (
        f"{prog} serve: generated a bearer token (choose one with --auth-token or "
        "MCP_SERVE_TOKEN; --no-auth serves without)\n"
        f"  MCP_BEARER_TOKEN={token} {prog} tools list {url}\n"
        f"  {json.dumps(entry)}\n"
    )


async def _serve_http(app: App, server: Any, http: _Http, file: str) -> None:
    from mcpcli.server import serve_http
    from mcpcli.server.http import LOOPBACK_NAMES, is_loopback

    def ready(url: str) -> None:
        if http.generated:
            assert http.token is not None
            app.stderr.write(_token_help(app.prog, file, url, http.token))
        app.info(f"serving {file} at {url}")

    hosts = None
    if http.allow_hosts:
        # Extra names add to what the bind already accepts; they never replace loopback.
        base = LOOPBACK_NAMES if is_loopback(http.host) else (*LOOPBACK_NAMES, http.host)
        hosts = (*base, *http.allow_hosts)
    origins = None
    if http.allow_origins:
        origins = (*LOOPBACK_NAMES, *http.allow_origins)
    await serve_http(
        server, host=http.host, port=http.port, auth_token=http.token, on_ready=ready,
        allowed_hosts=hosts, allowed_origins=origins, sse_poll_after=http.sse_poll_after,
        session_prefix=f"{http.replica}." if http.replica else "",
    )
