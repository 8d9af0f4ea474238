"""`ToolsBackend`: a tools.yaml file as a `mcpcli.server.backend.Backend`.

The backend holds one immutable `Config` snapshot at a time; every request reads
the snapshot current when it starts (so list and call always agree, and a reload
never changes a call in flight). `reload()` swaps in a new snapshot only when
the file is valid, and reports what changed to the runtime's change listener.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import quote, unquote

import anyio

from mcpcli.errors import ConfigError, RPCError
from mcpcli.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from mcpcli.serve import templating
from mcpcli.serve.channel import ChannelDirectory, ChannelServer
from mcpcli.serve.invoke import ArgumentProblems, build_command, check_arguments
from mcpcli.serve.load import load_config
from mcpcli.serve.model import (
    MISSING,
    Config,
    Param,
    Prompt,
    PromptArg,
    Resource,
    RunSpec,
    Tool,
)
from mcpcli.serve.process import RunResult, SpawnError, run_process, signal_name
from mcpcli.serve.results import Masker, error_result, tool_result
from mcpcli.server.backend import CallContext, ChangeListener, InputDeclined, ResourceNotFound

__all__ = ["ToolsBackend"]

JSON = dict[str, Any]
MAX_RESOURCE_BYTES = 16 * 1024 * 1024
MAX_DIRECTORY_FILES = 1000
MAX_COMPLETIONS = 100


class _Slots:
    """Per-tool and global concurrency limits."""

    def __init__(self) -> None:
        self.global_limit = 0
        self.global_sem = anyio.Semaphore(1)
        self.per_key: dict[str, tuple[int, anyio.Semaphore]] = {}

    def configure(self, config: Config) -> None:
        if config.limits.max_concurrent != self.global_limit:
            self.global_limit = config.limits.max_concurrent
            self.global_sem = anyio.Semaphore(self.global_limit)

    def for_key(self, key: str, limit: int) -> anyio.Semaphore:
        current = self.per_key.get(key)
        if current is None or current[0] != limit:
            current = (limit, anyio.Semaphore(limit))
            self.per_key[key] = current
        return current[1]


class ToolsBackend:
    """Serves one tools.yaml file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        log: Callable[[str], None] | None = None,
        warn: Callable[[str], None] | None = None,
        environ: dict[str, str] | None = None,
        config: Config | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self._environ = environ
        self._log = log
        self._warn = warn or log
        self._config = config or load_config(self.path, environ=environ)
        self._listener: ChangeListener | None = None
        self._slots = _Slots()
        self._slots.configure(self._config)
        self._channels = ChannelDirectory()
        self._channel = ChannelServer(self._channels)
        self._file_stamp = _stamp(self.path)
        self._resource_stamps: dict[str, Any] = {}
        self._check_resource_files()

    # -- identity and capabilities -----------------------------------------------------

    @property
    def config(self) -> Config:
        return self._config

    def server_info(self) -> JSON:
        return dict(self._config.server)

    def instructions(self) -> str | None:
        return self._config.instructions

    def capabilities(self) -> JSON:
        return {
            "tools": {},
            "resources": {"subscribe": True},
            "prompts": {},
            "completions": {},
        }

    def set_change_listener(self, listener: ChangeListener | None) -> None:
        self._listener = listener

    def close(self) -> None:
        self._channel.close()
        self._channels.close()

    def _announce(self, kind: str, uri: str | None) -> None:
        """A script said something changed (`mcp script changed ...`)."""
        if self._listener is not None:
            self._listener(kind, uri)

    def _audit(self, text: str) -> None:
        """One line per call and per reload (silenced by `mcp serve --quiet`)."""
        if self._log is not None:
            self._log(text)

    def _problem(self, text: str) -> None:
        """Something the operator must see (never silenced)."""
        if self._warn is not None:
            self._warn(text)

    def _env(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    # -- reload ------------------------------------------------------------------------

    def reload(self) -> bool:
        """Load the file again; keep the current snapshot if it is invalid. True when it changed."""
        try:
            new = load_config(self.path, environ=self._environ)
        except ConfigError as exc:
            problems = getattr(exc, "problems", None)
            lines = [str(p) for p in problems] if problems else [exc.message]
            self._problem(f"reload failed; still serving the previous version of {self.path}:")
            for line in lines:
                self._problem("  " + line)
            return False
        old = self._config
        self._config = new
        self._slots.configure(new)
        changed = False
        kinds = (
            ("tools", [t.listing() for t in old.tools.values()], [t.listing() for t in new.tools.values()]),
            ("resources", [r.listing() for r in old.resources], [r.listing() for r in new.resources]),
            ("prompts", [p.listing() for p in old.prompts.values()], [p.listing() for p in new.prompts.values()]),
        )
        for kind, before, after in kinds:
            if before != after:
                changed = True
                self._audit(f"reloaded {self.path}: {kind} changed")
                if self._listener is not None:
                    self._listener(kind, None)
        if not changed:
            self._audit(f"reloaded {self.path}: no visible change")
        for warning in new.warnings:
            self._problem(warning.format("warning"))
        return changed

    async def watch(self, interval: float = 0.5) -> None:
        """Poll the file (and subscribable resources) forever; reload on change."""
        missing_reported = False
        while True:
            await anyio.sleep(interval)
            stamp = _stamp(self.path)
            if stamp is None:
                if not missing_reported:
                    self._problem(f"{self.path} disappeared; still serving the last version")
                    missing_reported = True
                continue
            missing_reported = False
            if stamp != self._file_stamp:
                # Let an editor finish writing (debounce), then load.
                await anyio.sleep(min(0.1, interval))
                settled = _stamp(self.path)
                if settled != stamp:
                    continue
                self._file_stamp = stamp
                self.reload()
            self._check_resource_files()

    def _check_resource_files(self) -> None:
        for res in self._config.resources:
            if res.kind != "static" or res.source != "file" or not res.subscribe or res.file is None:
                continue
            path = res.file.source
            stamp = _stamp(path)
            key = res.uri or path
            changed = key in self._resource_stamps and self._resource_stamps[key] != stamp
            if changed and self._listener is not None:
                self._listener("resource", res.uri)
            self._resource_stamps[key] = stamp

    # -- tools ---------------------------------------------------------------------------

    async def list_tools(self) -> list[JSON]:
        return [tool.listing() for tool in self._config.tools.values()]

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        config = self._config
        tool = config.tools.get(name)
        if tool is None:
            raise RPCError(INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})
        missing = self._missing_capabilities(tool.requires, ctx)
        if missing:
            if ctx.era == "modern":
                # The runtime answers -32021 MissingRequiredClientCapability (HTTP 400).
                raise InputDeclined(f"tool {name} needs {', '.join(missing)}", capabilities=missing)
            return error_result(f"this tool needs a client that supports {', '.join(missing)}")
        started = time.monotonic()
        cwd = tool.run.cwd if tool.run is not None else config.base_dir
        try:
            values = check_arguments(tool.params, _validator(tool), arguments, cwd=cwd,
                                     passthrough=tool.raw_input_schema is not None)
        except ArgumentProblems as exc:
            self._audit(f"call tool={name} status=invalid-arguments")
            return error_result(exc.text())
        mask = Masker(config.secret_values())
        if tool.mock is not None:
            return self._mock(tool, values, mask)
        assert tool.run is not None
        result = await self._run_tool(config, tool, tool.run, values, ctx, mask, started)
        return result

    def _missing_capabilities(self, requires: tuple[str, ...], ctx: CallContext) -> list[str]:
        caps = ctx.client_capabilities or {}
        return [cap for cap in requires if not isinstance(caps.get(cap), dict)]

    def _mock(self, tool: Tool, values: JSON, mask: Masker) -> JSON:
        mock = tool.mock or {}
        scope = dict(values)
        scope["mcp.tool"] = tool.name
        if "text" in mock:
            return {"content": [{"type": "text", "text": mask(_render_text(mock["text"], scope))}]}
        if "error" in mock:
            return error_result(mask(_render_text(mock["error"], scope)))
        if "content" in mock:
            return {"content": mask.json(list(mock["content"]))}
        value = mock["json"]
        structured = value if isinstance(value, dict) else {"result": value}
        return {"content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
                "structuredContent": structured}

    async def _acquire(self, stack: AsyncExitStack, config: Config, key: str, limit: int) -> bool:
        """Take a per-key slot and a global slot within the queue timeout (released by `stack`)."""
        semaphores = (self._slots.for_key(key, limit), self._slots.global_sem)
        waiting: list[anyio.Semaphore] = []
        for sem in semaphores:
            try:
                sem.acquire_nowait()  # the common case: a free slot, no trip through the loop
            except anyio.WouldBlock:
                waiting.append(sem)
                break
            stack.callback(sem.release)
        if not waiting:
            return True
        with anyio.move_on_after(config.limits.queue_timeout):
            for sem in semaphores[semaphores.index(waiting[0]):]:
                await sem.acquire()
                stack.callback(sem.release)
            return True
        return False

    async def _run_tool(self, config: Config, tool: Tool, spec: RunSpec, values: JSON, ctx: CallContext,
                        mask: Masker, started: float) -> JSON:
        async with AsyncExitStack() as stack:
            if not await self._acquire(stack, config, f"tool:{tool.name}", spec.concurrency):
                self._audit(f"call tool={tool.name} status=busy")
                return error_result(
                    f"server busy: too many calls running (waited {config.limits.queue_timeout:g}s); try again"
                )
            output_dir = None
            if tool.output.files or spec.uses_output_dir:
                output_dir = tempfile.mkdtemp(prefix="mcp-out-")
                stack.callback(shutil.rmtree, output_dir, True)
            try:
                run = await self._spawn(config, spec, tool.params, values, ctx, mask, stack,
                                        tool_name=tool.name, output_dir=output_dir,
                                        max_bytes=tool.output.max_bytes,
                                        kill_on_overflow=tool.output.on_overflow == "kill")
            except ArgumentProblems as exc:
                self._audit(f"call tool={tool.name} status=invalid-arguments")
                return error_result(exc.text())
            except SpawnError as exc:
                self._audit(f"call tool={tool.name} status=spawn-failed")
                return error_result(mask(str(exc)))
            except anyio.get_cancelled_exc_class():
                self._audit(f"call tool={tool.name} status=cancelled duration={time.monotonic() - started:.3f}s")
                raise
            validate = _output_validator(tool)
            result = tool_result(
                run,
                tool.output,
                ok_codes=spec.ok_exit_codes,
                timeout=spec.timeout,
                mask=mask,
                structured_objects_only=ctx.era == "legacy",
                output_dir=output_dir,
                validate_output=validate,
            )
            self._audit(
                f"call tool={tool.name} status={'error' if result.get('isError') else 'ok'} "
                f"{_describe_end(run)} duration={run.duration:.3f}s "
                f"stdout={run.stdout_total}B stderr={run.stderr_total}B"
                + (" timeout" if run.timed_out else "")
                + (" truncated" if run.stdout_truncated or run.stderr_truncated else "")
            )
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    async def _spawn(self, config: Config, spec: RunSpec, params: dict[str, Param], values: JSON,
                     ctx: CallContext | None, mask: Masker, stack: AsyncExitStack, *, tool_name: str,
                     output_dir: str | None, max_bytes: int, kill_on_overflow: bool = False,
                     extra_env: dict[str, str] | None = None) -> RunResult:
        builtins = {
            "mcp.config_dir": config.base_dir,
            "mcp.tool": tool_name,
            "mcp.python": sys.executable or "python3",
            "mcp.cwd": spec.cwd,
        }
        env_extra: dict[str, str] = {"MCP_TOOL": tool_name, "MCP_CONFIG_DIR": config.base_dir}
        if output_dir is not None:
            builtins["mcp.output_dir"] = output_dir
            env_extra["MCP_OUTPUT_DIR"] = output_dir
        if ctx is not None:
            env_extra["MCP_PROTOCOL_VERSION"] = ctx.protocol_version
            env_extra["MCP_CLIENT_CAPABILITIES"] = json.dumps(ctx.client_capabilities or {},
                                                              separators=(",", ":"))
            channel_env = await stack.enter_async_context(
                self._channel.call(ctx, mask=mask, logger=tool_name, changed=self._announce)
            )
            env_extra.update(channel_env)
        if extra_env:
            env_extra.update(extra_env)
        base_env = self._env()
        prepared = build_command(spec, params, values, builtins=builtins, secrets=config.secrets,
                                 base_env=base_env, extra_env=env_extra)
        path_value = prepared.env.get("PATH") or os.defpath
        if ctx is not None:
            prepared.env["PATH"] = self._channels.bin_dir + os.pathsep + path_value
        if not os.path.isdir(spec.cwd):
            raise SpawnError(f"cannot start {prepared.argv[0]}: the working directory {spec.cwd} does not exist")
        return await run_process(
            prepared.argv,
            env=prepared.env,
            cwd=spec.cwd,
            stdin=prepared.stdin,
            timeout=min(spec.timeout, config.limits.max_timeout),
            kill_grace=spec.kill_grace,
            max_bytes=max_bytes,
            kill_on_overflow=kill_on_overflow,
        )

    # -- resources -------------------------------------------------------------------------

    async def list_resources(self) -> list[JSON]:
        out: list[JSON] = []
        for res in self._config.resources:
            if res.kind == "static":
                out.append(res.listing())
            elif res.kind == "directory":
                out.extend(_directory_listing(res))
        return out

    async def list_resource_templates(self) -> list[JSON]:
        return [res.listing() for res in self._config.resources if res.kind == "template"]

    async def read_resource(self, uri: str, ctx: CallContext) -> JSON:
        config = self._config
        for res in config.resources:
            if res.kind == "static" and res.uri == uri:
                return await self._read_static(config, res, uri, ctx)
        for res in config.resources:
            if res.kind == "directory" and res.uri and uri.startswith(res.uri):
                return _read_directory_file(res, uri)
        for res in config.resources:
            if res.kind == "template" and res.matcher is not None:
                match = res.matcher.fullmatch(uri)
                if match:
                    return await self._read_template(config, res, uri, match.groupdict(), ctx)
        raise ResourceNotFound(uri)

    async def _read_static(self, config: Config, res: Resource, uri: str, ctx: CallContext) -> JSON:
        if res.source == "text":
            assert res.text is not None
            return {"contents": [{"uri": uri, "mimeType": res.mime_type or "text/plain", "text": res.text.source}]}
        if res.source == "file":
            assert res.file is not None
            return {"contents": [_file_contents(uri, res.file.source, res.mime_type)]}
        assert res.command is not None
        return await self._read_command(config, res, res.command, {}, {}, uri, ctx)

    async def _read_template(self, config: Config, res: Resource, uri: str, raw: dict[str, str],
                             ctx: CallContext) -> JSON:
        values: JSON = {}
        problems: list[str] = []
        for name, param in res.params.items():
            text = unquote(raw.get(name, ""))
            try:
                values[name] = _coerce_template_value(param, text, config.base_dir)
            except ValueError as exc:
                problems.append(f"{name}: {exc}")
        if problems:
            raise RPCError(INVALID_PARAMS, f"Invalid resource URI {uri}: " + "; ".join(problems), {"uri": uri})
        if res.source == "text":
            assert res.text is not None
            text = _render_text(res.text.source, values)
            return {"contents": [{"uri": uri, "mimeType": res.mime_type or "text/plain", "text": text}]}
        if res.source == "file":
            assert res.file is not None
            assert res.file_root is not None
            rendered = res.file.render(values)
            if rendered is None:
                raise ResourceNotFound(uri)
            real = os.path.realpath(rendered)
            root = res.file_root.rstrip("/") + "/"
            if not real.startswith(root):
                raise RPCError(INVALID_PARAMS, f"Invalid resource URI {uri}: outside the template's directory",
                               {"uri": uri})
            if not os.path.isfile(real):
                raise ResourceNotFound(uri)
            return {"contents": [_file_contents(uri, real, res.mime_type)]}
        assert res.command is not None
        return await self._read_command(config, res, res.command, res.params, values, uri, ctx)

    async def _read_command(self, config: Config, res: Resource, spec: RunSpec, params: dict[str, Param],
                            values: JSON, uri: str, ctx: CallContext) -> JSON:
        mask = Masker(config.secret_values())
        async with AsyncExitStack() as stack:
            if not await self._acquire(stack, config, f"resource:{res.uri or res.uri_template}", spec.concurrency):
                raise RPCError(INTERNAL_ERROR, "server busy: too many calls running; try again")
            try:
                run = await self._spawn(config, spec, params, values, ctx, mask, stack, tool_name=res.name,
                                        output_dir=None, max_bytes=MAX_RESOURCE_BYTES,
                                        extra_env={"MCP_RESOURCE_URI": uri})
            except (SpawnError, ArgumentProblems) as exc:
                raise RPCError(INTERNAL_ERROR, f"Cannot read {uri}: {mask(str(exc))}", {"uri": uri}) from None
        if run.timed_out or run.signal is not None or run.returncode not in spec.ok_exit_codes:
            why = (f"timed out after {spec.timeout:g}s" if run.timed_out else
                   f"terminated by {signal_name(run.signal)}" if run.signal is not None else
                   f"exit code {run.returncode}")
            detail = mask(run.stderr.decode("utf-8", "replace").strip()[-500:])
            raise RPCError(INTERNAL_ERROR, f"Cannot read {uri}: the command failed ({why})"
                           + (f": {detail}" if detail else ""), {"uri": uri})
        mime = res.mime_type or "text/plain"
        return {"contents": [_bytes_contents(uri, run.stdout, mime, mask)]}

    # -- prompts ----------------------------------------------------------------------------

    async def list_prompts(self) -> list[JSON]:
        return [p.listing() for p in self._config.prompts.values()]

    async def get_prompt(self, name: str, arguments: dict[str, str], ctx: CallContext) -> JSON:
        config = self._config
        prompt = config.prompts.get(name)
        if prompt is None:
            raise RPCError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name})
        missing = self._missing_capabilities(prompt.requires, ctx)
        if missing:
            raise InputDeclined(f"prompt {name} needs {', '.join(missing)}", capabilities=missing)
        values = _check_prompt_arguments(prompt, arguments or {})
        mask = Masker(config.secret_values())
        if prompt.run is not None:
            return await self._run_prompt(config, prompt, values, ctx, mask)
        messages: list[JSON] = []
        for message in prompt.messages:
            content = await self._message_content(config, message, values, ctx)
            messages.append({"role": message.role, "content": content})
        result: JSON = {"messages": messages}
        if prompt.description:
            result["description"] = prompt.description
        return result

    async def _message_content(self, config: Config, message: Any, values: JSON, ctx: CallContext) -> JSON:
        kind = message.kind
        if kind == "text":
            return {"type": "text", "text": _render(message.text, values)}
        if kind in ("file", "image", "audio"):
            data = _read_file_bytes(message.path)
            mime = message.mime_type or mimetypes.guess_type(message.path)[0] or (
                "text/plain" if kind == "file" else "application/octet-stream")
            if kind == "image" or (kind == "file" and mime.startswith("image/")):
                return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime}
            if kind == "audio" or (kind == "file" and mime.startswith("audio/")):
                return {"type": "audio", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime}
            return {"type": "text", "text": data.decode("utf-8", "replace")}
        if kind == "resource_uri":
            uri = _render(message.uri, values)
            result = await self.read_resource(uri, ctx)
            contents = result.get("contents") or []
            if not contents:
                raise ResourceNotFound(uri)
            return {"type": "resource", "resource": contents[0]}
        uri = _render(message.uri, values)
        if message.text is not None:
            return {"type": "resource", "resource": {"uri": uri, "mimeType": message.mime_type or "text/plain",
                                                     "text": _render(message.text, values)}}
        return {"type": "resource", "resource": _file_contents(uri, message.path, message.mime_type)}

    async def _run_prompt(self, config: Config, prompt: Prompt, values: JSON, ctx: CallContext,
                          mask: Masker) -> JSON:
        assert prompt.run is not None
        params = {n: Param(n, "string", a.required, a.default if a.default is not None else MISSING,
                           {"type": "string"}) for n, a in prompt.arguments.items()}
        async with AsyncExitStack() as stack:
            if not await self._acquire(stack, config, f"prompt:{prompt.name}", prompt.run.concurrency):
                raise RPCError(INTERNAL_ERROR, "server busy: too many calls running; try again")
            try:
                run = await self._spawn(config, prompt.run, params, values, ctx, mask, stack,
                                        tool_name=prompt.name, output_dir=None, max_bytes=prompt.max_bytes)
            except (SpawnError, ArgumentProblems) as exc:
                raise RPCError(INTERNAL_ERROR, f"Prompt {prompt.name}: {mask(str(exc))}") from None
        if run.timed_out or run.signal is not None or run.returncode not in prompt.run.ok_exit_codes:
            why = ("timed out" if run.timed_out else f"terminated by {signal_name(run.signal)}"
                   if run.signal is not None else f"exit code {run.returncode}")
            detail = mask(run.stderr.decode("utf-8", "replace").strip()[-500:])
            raise RPCError(INTERNAL_ERROR, f"Prompt {prompt.name}: the command failed ({why})"
                           + (f": {detail}" if detail else ""))
        text = mask(run.stdout.decode("utf-8", "replace"))
        if prompt.output_format == "mcp":
            try:
                value = json.loads(text)
            except ValueError as exc:
                raise RPCError(INTERNAL_ERROR, f"Prompt {prompt.name}: the command's output is not JSON: {exc}") from None
            if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
                raise RPCError(INTERNAL_ERROR, f"Prompt {prompt.name}: expected a JSON object with messages")
            result = {k: v for k, v in value.items() if k in ("messages", "description", "_meta")}
            return result
        result = {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
        if prompt.description:
            result["description"] = prompt.description
        return result

    # -- completion ---------------------------------------------------------------------------

    async def complete(self, ref: JSON, argument: JSON, context: JSON) -> JSON:
        config = self._config
        ref_type = ref.get("type")
        arg_name = str(argument.get("name", ""))
        value = str(argument.get("value", ""))
        others = (context or {}).get("arguments") or {}
        source: Any = None
        if ref_type == "ref/prompt":
            prompt = config.prompts.get(str(ref.get("name")))
            if prompt is None:
                raise RPCError(INVALID_PARAMS, f"Unknown prompt: {ref.get('name')}")
            arg: PromptArg | None = prompt.arguments.get(arg_name)
            if arg is not None:
                source = arg.complete if arg.complete is not None else arg.enum
        elif ref_type == "ref/resource":
            template = next((r for r in config.templates if r.uri_template == ref.get("uri")), None)
            if template is None:
                raise RPCError(INVALID_PARAMS, f"Unknown resource template: {ref.get('uri')}")
            param = template.params.get(arg_name)
            if param is not None:
                source = param.complete if param.complete is not None else param.schema.get("enum")
        else:
            raise RPCError(INVALID_PARAMS, f"Unknown completion reference type: {ref_type}")
        candidates: list[str] = []
        if isinstance(source, (list, tuple)):
            candidates = [str(v) for v in source]
        elif isinstance(source, RunSpec):
            candidates = await self._complete_command(config, source, arg_name, value, others)
        matches = [c for c in candidates if c.startswith(value)]
        if not matches and value:
            lowered = value.lower()
            matches = [c for c in candidates if c.lower().startswith(lowered)]
        values = matches[:MAX_COMPLETIONS]
        return {"completion": {"values": values, "total": len(matches), "hasMore": len(matches) > len(values)}}

    async def _complete_command(self, config: Config, spec: RunSpec, name: str, value: str,
                                others: JSON) -> list[str]:
        env = {"MCP_COMPLETE_ARG": name, "MCP_COMPLETE_VALUE": value}
        for key, other in others.items():
            if isinstance(key, str) and isinstance(other, str) and key.isidentifier():
                env["MCP_ARG_" + key.upper()] = other
        mask = Masker(config.secret_values())
        async with AsyncExitStack() as stack:
            if not await self._acquire(stack, config, "completion", spec.concurrency):
                return []
            try:
                run = await self._spawn(config, spec, {}, {}, None, mask, stack, tool_name="completion",
                                        output_dir=None, max_bytes=256 * 1024, extra_env=env)
            except (SpawnError, ArgumentProblems) as exc:
                self._problem(f"completion command failed: {exc}")
                return []
        if run.returncode not in spec.ok_exit_codes:
            return []
        lines = run.stdout.decode("utf-8", "replace").splitlines()
        return [mask(line) for line in lines if line.strip()]


# -- helpers ------------------------------------------------------------------------------------


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _validator(tool: Tool) -> Any:
    cached = tool.__dict__.get("_validator")
    if cached is None:
        from mcpcli.validation import compile_schema

        cached = compile_schema(tool.input_schema)
        tool.__dict__["_validator"] = cached
    return cached


def _output_validator(tool: Tool) -> Callable[[Any], list[str]] | None:
    schema = tool.output_schema
    if schema is None:
        return None
    cached = tool.__dict__.get("_output_validator")
    if cached is None:
        from mcpcli.validation import compile_schema

        cached = compile_schema(schema)
        tool.__dict__["_output_validator"] = cached
    validator = cached

    def check(value: Any) -> list[str]:
        from mcpcli.validation import errors

        return [f"{path}: {msg}" if path else msg for path, msg in errors(validator, value)]

    return check


def _render(template: Any, values: JSON) -> str:
    """Render a placeholder template; absent values become empty text (this is content, not argv)."""
    out = []
    for part in template.parts:
        if part.name is None:
            out.append(part.text)
        else:
            value = values.get(part.name)
            out.append("" if value is None else templating.stringify(value))
    return "".join(out)


def _render_text(text: str, values: JSON) -> str:
    return _render(templating.parse(text, strict=False), values)


def _describe_end(run: RunResult) -> str:
    if run.timed_out:
        return "end=timeout"
    if run.signal is not None:
        return f"end={signal_name(run.signal)}"
    return f"exit={run.returncode}"


def _read_file_bytes(path: str, limit: int = MAX_RESOURCE_BYTES) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise RPCError(INTERNAL_ERROR, f"cannot read {os.path.basename(path)}: {exc.strerror}") from None
    if len(data) > limit:
        raise RPCError(INTERNAL_ERROR, f"{os.path.basename(path)} is larger than {limit} bytes")
    return data


def _bytes_contents(uri: str, data: bytes, mime: str, mask: Masker | None = None) -> JSON:
    textual = mime.startswith("text/") or mime in ("application/json", "application/xml", "application/yaml",
                                                   "application/x-yaml", "image/svg+xml") or mime.endswith(
        ("+json", "+xml"))
    if textual:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            textual = False
        else:
            return {"uri": uri, "mimeType": mime, "text": mask(text) if mask else text}
    return {"uri": uri, "mimeType": mime, "blob": base64.b64encode(data).decode("ascii")}


def _file_contents(uri: str, path: str | None, mime: str | None) -> JSON:
    assert path is not None
    if not os.path.isfile(path):
        raise ResourceNotFound(uri)
    data = _read_file_bytes(path)
    guessed = mime or mimetypes.guess_type(path)[0]
    if guessed is None:
        guessed = "application/octet-stream" if b"\x00" in data[:8192] else "text/plain"
    return _bytes_contents(uri, data, guessed)


def _directory_files(res: Resource) -> list[str]:
    assert res.directory is not None
    root = os.path.realpath(res.directory)
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if not (fnmatchcase(rel, res.glob) or fnmatchcase(name, res.glob)):
                continue
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            found.append(rel)
            if len(found) >= MAX_DIRECTORY_FILES:
                return found
    return found


def _directory_listing(res: Resource) -> list[JSON]:
    out = []
    for rel in _directory_files(res):
        entry: JSON = {"uri": (res.uri or "") + quote(rel), "name": rel}
        mime = res.mime_type or mimetypes.guess_type(rel)[0]
        if mime:
            entry["mimeType"] = mime
        if res.description:
            entry["description"] = res.description
        out.append(entry)
    return out


def _read_directory_file(res: Resource, uri: str) -> JSON:
    assert res.directory is not None
    assert res.uri is not None
    rel = unquote(uri[len(res.uri):])
    root = os.path.realpath(res.directory)
    full = os.path.realpath(os.path.join(root, rel))
    if not full.startswith(root.rstrip("/") + "/") or not os.path.isfile(full):
        raise ResourceNotFound(uri)
    relative = os.path.relpath(full, root)
    if any(part.startswith(".") for part in relative.split(os.sep)):
        raise ResourceNotFound(uri)
    if not (fnmatchcase(relative, res.glob) or fnmatchcase(os.path.basename(relative), res.glob)):
        raise ResourceNotFound(uri)
    return {"contents": [_file_contents(uri, full, res.mime_type)]}


def _coerce_template_value(param: Param, text: str, base_dir: str) -> Any:
    """A URI template variable is text; check it against the param's declared type and schema."""
    from mcpcli.validation import compile_schema, errors

    if "\x00" in text:
        raise ValueError("contains a NUL byte")
    value: Any = text
    if param.type == "integer":
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
    elif param.type == "number":
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
    problems = errors(compile_schema(param.schema), value)
    if problems:
        raise ValueError(problems[0][1])
    if param.type == "path":
        from mcpcli.serve.invoke import resolve_path

        value = resolve_path(param, text, base_dir)
    return value


def _check_prompt_arguments(prompt: Prompt, arguments: dict[str, Any]) -> JSON:
    problems = []
    values: JSON = {}
    for name, value in arguments.items():
        if name not in prompt.arguments:
            problems.append(f"unknown argument {name!r}")
            continue
        if not isinstance(value, str):
            problems.append(f"{name}: must be a string")
            continue
        if "\x00" in value:
            problems.append(f"{name}: contains a NUL byte")
            continue
        values[name] = value
    for name, arg in prompt.arguments.items():
        if name not in values:
            if arg.default is not None:
                values[name] = arg.default
            elif arg.required:
                problems.append(f"missing required argument {name!r}")
            continue
        value = values[name]
        if arg.enum is not None and value not in arg.enum:
            problems.append(f"{name}: {value!r} is not one of {', '.join(arg.enum)}")
        if arg.max_length is not None and len(value) > arg.max_length:
            problems.append(f"{name}: longer than {arg.max_length} characters")
        if arg.pattern is not None and not arg.pattern.fullmatch(value):
            problems.append(f"{name}: {value[:40]!r} does not match {arg.pattern.pattern}")
    if problems:
        raise RPCError(INVALID_PARAMS, f"Invalid arguments for prompt {prompt.name}: " + "; ".join(problems))
    return values
