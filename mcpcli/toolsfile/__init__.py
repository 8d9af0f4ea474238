"""The tools.yaml server (`mcp serve`): tools, resources and prompts backed by commands and files.

This package owns the tools.yaml format and everything behind it: the schema,
loading and checking a file, the `Backend` it builds for the server runtime,
and the script processes it runs (with their side channel and the watchdog
that ends them if the server dies). It may import `mcpcli.server` (the
`Backend` protocol it implements, and the runtime it serves in-process),
`mcpcli.transports` (the in-process transport's stream types), and the shared
`protocol`, `jsonrpc`, `errors`, `args` and `validation`; never `client`,
`connect`, `auth` or `cli`, which sit above it (tests/unit/test_import_rules.py
checks this). The protocol itself (eras, transports, sessions) is
`mcpcli.server`'s job.

* `load` loads and checks a tools.yaml file into an immutable `model.ToolsFile`
  (strict YAML in `yamlstrict`, the format's JSON Schema in `tools.schema.json`
  checked by `structure`, then the `build*` modules check the meaning);
* `backend.ToolsBackend` serves a `ToolsFile` as a `mcpcli.server.backend.Backend`,
  one module per feature doing the work: `tool_calls`, `resources`, `prompts`,
  `completion` (with `contents` for rendered text and file contents);
  `transport.YamlTransport` serves it in-process to our own client;
* `runner` runs a command for a request (concurrency slots, environment, side
  channel): `arguments` checks a call's arguments and turns them into
  argv/env/stdin, `process` runs the command in its own process group (which
  `watchdog` ends if the server is killed), `results` maps the output to a
  CallToolResult;
* `channel` and `script_client` are the side channel (`mcp script ...`).
"""

from __future__ import annotations

# Kept import-light: the `mcp script` helper imports this package once per callback.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import os

    from mcpcli.toolsfile.transport import YamlTransport

__all__ = ["example_path", "in_process_transport", "schema_text"]


def example_path() -> str:
    """The bundled example tools.yaml (what `mcp serve --example` serves)."""
    from importlib.resources import files

    return str(files("mcpcli.toolsfile") / "example" / "tools.yaml")


def schema_text() -> str:
    from mcpcli.toolsfile.model import schema_text as text

    return text()


def in_process_transport(path: str | os.PathLike[str]) -> YamlTransport:
    """Serve `path`'s own tools, resources and prompts in-process for a client.

    The file is loaded now, so an invalid file fails before anything connects
    (`ToolsFileError`, exit status 2). Its `servers:` are not served here: the gateway
    sits above this package (`mcpcli.gateway.serve_file.file_transport` serves them too,
    and is what the commands use, through `ConnectOptions.serve_file`).
    """
    from mcpcli.toolsfile.backend import ToolsBackend
    from mcpcli.toolsfile.transport import YamlTransport

    return YamlTransport(ToolsBackend(path))
