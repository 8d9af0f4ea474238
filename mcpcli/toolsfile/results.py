"""From a finished process to a CallToolResult, following the tool's `output:` rules.

Nothing is guessed from the content: the tool declares what its stdout is (text,
json, image/audio/blob with a MIME type, or a complete MCP result; with `mcp` a
`{"error": {code, message, data?}}` answers the request with that JSON-RPC
error, a protocol error, raised as `RPCError`). Exit codes
outside `ok_exit_codes`, deaths by signal and timeouts are `isError` results
carrying stderr and the reason. Secrets are masked in every text we return.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import mimetypes
import os
import stat
from collections.abc import Callable
from typing import Any

from mcpcli.core import jsonrpc
from mcpcli.errors import RPCError
from mcpcli.toolsfile.model import FileSpec, OutputSpec, format_size
from mcpcli.toolsfile.process import RunResult, signal_name

__all__ = ["Masker", "error_result", "text_result", "tool_result"]

JSON = dict[str, Any]
STDOUT_URI = "mcp-output:stdout"


class Masker:
    """Replaces secret values with ***; best effort (a split or encoded secret gets through)."""

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = sorted(set(secrets), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    def json(self, value: Any) -> Any:
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, dict):
            return {k: self.json(v) for k, v in value.items()}
        return value


def text_result(text: str, *, is_error: bool = False) -> JSON:
    result: JSON = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def error_result(text: str) -> JSON:
    return text_result(text, is_error=True)


def _decode(data: bytes) -> tuple[str, bool]:
    """Text, and whether the bytes look binary (NUL bytes or mostly undecodable)."""
    text = data.decode("utf-8", errors="replace")
    if b"\x00" in data:
        return text, True
    bad = text.count("\ufffd")
    return text, bool(data) and bad > max(1, len(text) // 100)


def _truncation_note(dropped: int, cap: int) -> str:
    return f"\n[... {format_size(dropped)} truncated; output.max_bytes={format_size(cap)}]"


def _stream_text(data: bytes, dropped: int, cap: int, mask: Masker) -> str:
    text, _ = _decode(data)
    text = mask(text)
    if dropped:
        text += _truncation_note(dropped, cap)
    return text


def _status_line(run: RunResult, timeout: float) -> str:
    if run.timed_out:
        return f"timed out after {timeout:g}s (process group killed)"
    if run.overflowed:
        return "stopped: output exceeded output.max_bytes (on_overflow: kill)"
    if run.signal is not None:
        return f"terminated by {signal_name(run.signal)}"
    return f"exit code {run.returncode}"


def tool_result(
    run: RunResult,
    output: OutputSpec,
    *,
    ok_codes: frozenset[int],
    timeout: float,
    mask: Masker,
    structured_objects_only: bool,
    output_dir: str | None,
    validate_output: Callable[[Any], list[str]] | None = None,
) -> JSON:
    """The CallToolResult for a finished run."""
    failed = run.timed_out or run.overflowed or run.signal is not None or run.returncode not in ok_codes
    stderr_text = _stream_text(run.stderr, run.stderr_truncated, output.max_bytes, mask).rstrip("\n")
    if failed:
        return _failed_run(run, output, timeout, mask, stderr_text)
    done = _Finished(run, output, mask, stderr_text)
    fmt = output.format
    if fmt == "text":
        result = _text_output(done)
    elif fmt == "json":
        result = _json_output(done, structured_objects_only, validate_output)
    elif fmt in ("image", "audio", "blob"):
        result = _binary_output(done)
    else:  # mcp
        result = _mcp_output(done, structured_objects_only)
    if done.rejected:  # the output was unusable: no extras after the excerpt
        return result
    if stderr_text and output.stderr == "always":
        result["content"].append({"type": "text", "text": "stderr:\n" + stderr_text})
    if output_dir is not None and output.files:
        result["content"].extend(attach_files(output_dir, output.files, mask))
    return result


def _failed_run(run: RunResult, output: OutputSpec, timeout: float, mask: Masker, stderr_text: str) -> JSON:
    """A run that failed (exit code, signal, timeout, overflow): what it printed, and why it ended."""
    content: list[JSON] = []
    if run.stdout:
        content.append({"type": "text", "text": _stream_text(run.stdout, run.stdout_truncated,
                                                              output.max_bytes, mask)})
    if stderr_text and output.stderr != "never":
        content.append({"type": "text", "text": "stderr:\n" + stderr_text})
    content.append({"type": "text", "text": _status_line(run, timeout)})
    return {"content": content, "isError": True}


class _Finished:
    """A run that succeeded, whose output is being turned into a result."""

    def __init__(self, run: RunResult, output: OutputSpec, mask: Masker, stderr_text: str) -> None:
        self.run = run
        self.output = output
        self.mask = mask
        self.stderr_text = stderr_text
        self.rejected = False

    def fail(self, message: str) -> JSON:
        """The output cannot be used as declared: an error result with an excerpt of it."""
        self.rejected = True
        content = [{"type": "text", "text": message}]
        if self.run.stdout:
            excerpt, _ = _decode(self.run.stdout[:2000])
            content.append({"type": "text", "text": "stdout:\n" + self.mask(excerpt)})
        if self.stderr_text and self.output.stderr != "never":
            content.append({"type": "text", "text": "stderr:\n" + self.stderr_text})
        return {"content": content, "isError": True}


def _text_output(done: _Finished) -> JSON:
    run, output = done.run, done.output
    text, binary = _decode(run.stdout)
    if binary:
        note = (f"the output is binary ({format_size(run.stdout_total)}); attached as "
                "application/octet-stream")
        if run.stdout_truncated:
            note += _truncation_note(run.stdout_truncated, output.max_bytes)
        return {"content": [
            {"type": "text", "text": note},
            {"type": "resource", "resource": {"uri": STDOUT_URI, "mimeType": "application/octet-stream",
                                              "blob": base64.b64encode(run.stdout).decode("ascii")}},
        ]}
    text = done.mask(text)
    if run.stdout_truncated:
        text += _truncation_note(run.stdout_truncated, output.max_bytes)
    return {"content": [{"type": "text", "text": text}]}


def _json_output(done: _Finished, structured_objects_only: bool,
                 validate_output: Callable[[Any], list[str]] | None) -> JSON:
    run, output = done.run, done.output
    if run.stdout_truncated:
        return done.fail(f"the JSON output was cut at output.max_bytes={format_size(output.max_bytes)} "
                         f"({format_size(run.stdout_total)} produced); raise max_bytes")
    raw = run.stdout.decode("utf-8", errors="replace").strip()
    try:
        value = jsonrpc.loads(raw)
    except ValueError as exc:
        return done.fail(f"the tool's output is not valid JSON: {exc}")
    value = done.mask.json(value)
    if validate_output is not None:
        problems = validate_output(value)
        if problems:
            return done.fail("the tool's output does not match its outputSchema: " + "; ".join(problems[:5]))
    structured = value
    if not isinstance(value, dict) and structured_objects_only:
        structured = {"result": value}
    return {
        "content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
        "structuredContent": structured,
    }


def _binary_output(done: _Finished) -> JSON:
    run, output, fmt = done.run, done.output, done.output.format
    if run.stdout_truncated:
        return done.fail(f"the {fmt} output was cut at output.max_bytes={format_size(output.max_bytes)}; "
                         "raise max_bytes")
    if not run.stdout:
        return done.fail(f"the tool produced no output (expected {output.mime_type} data)")
    data = base64.b64encode(run.stdout).decode("ascii")
    if fmt == "blob":
        block: JSON = {"type": "resource", "resource": {"uri": STDOUT_URI, "mimeType": output.mime_type,
                                                        "blob": data}}
    else:
        block = {"type": fmt, "data": data, "mimeType": output.mime_type}
    return {"content": [block]}


def _mcp_output(done: _Finished, structured_objects_only: bool) -> JSON:
    run, output = done.run, done.output
    if run.stdout_truncated:
        return done.fail(f"the result was cut at output.max_bytes={format_size(output.max_bytes)}; raise max_bytes")
    try:
        value = jsonrpc.loads(run.stdout.decode("utf-8", errors="replace"))
    except ValueError as exc:
        return done.fail(f"the tool's output is not a valid MCP result (not JSON: {exc})")
    if isinstance(value, dict) and "error" in value and "content" not in value:
        error = value["error"]
        if not (isinstance(error, dict) and type(error.get("code")) is int
                and isinstance(error.get("message"), str)):
            return done.fail("the tool's output is not a valid MCP error: "
                             "error must be {code: integer, message: text, data?}")
        raise RPCError(error["code"], done.mask(error["message"]), done.mask.json(error.get("data")))
    problem = check_mcp_result(value, structured_objects_only=structured_objects_only)
    if problem:
        return done.fail(f"the tool's output is not a valid MCP result: {problem}")
    result = {k: v for k, v in value.items() if k in ("content", "structuredContent", "isError", "_meta")}
    return dict(done.mask.json(result))


_BLOCK_TYPES = {"text", "image", "audio", "resource", "resource_link"}


def check_mcp_result(value: Any, *, structured_objects_only: bool) -> str | None:
    if not isinstance(value, dict):
        return "expected a JSON object with a content list"
    content = value.get("content")
    if not isinstance(content, list):
        return "content must be a list"
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str) or block["type"] not in _BLOCK_TYPES:
            return f"content[{i}] must be an object with type one of {', '.join(sorted(_BLOCK_TYPES))}"
        kind = block["type"]
        if kind == "text" and not isinstance(block.get("text"), str):
            return f"content[{i}].text must be a string"
        if kind in ("image", "audio") and not (isinstance(block.get("data"), str)
                                               and isinstance(block.get("mimeType"), str)):
            return f"content[{i}] needs data (base64) and mimeType"
        if kind == "resource":
            res = block.get("resource")
            if not isinstance(res, dict) or not isinstance(res.get("uri"), str) or not (
                isinstance(res.get("text"), str) or isinstance(res.get("blob"), str)
            ):
                return f"content[{i}].resource needs uri and text or blob"
        if kind == "resource_link" and not (isinstance(block.get("uri"), str) and isinstance(block.get("name"), str)):
            return f"content[{i}] needs uri and name"
    if "isError" in value and not isinstance(value["isError"], bool):
        return "isError must be true or false"
    if "structuredContent" in value and structured_objects_only and not isinstance(value["structuredContent"], dict):
        return "structuredContent must be an object"
    return None


def _kind_for(mime: str, declared: str) -> str:
    if declared != "auto":
        return declared
    if mime.startswith("image/"):
        return "image"
    if mime.startswith("audio/"):
        return "audio"
    return "resource"


def _is_text_mime(mime: str) -> bool:
    return mime.startswith("text/") or mime in (
        "application/json", "application/xml", "application/yaml", "application/x-yaml",
        "application/javascript", "image/svg+xml",
    ) or mime.endswith("+json") or mime.endswith("+xml")


def attach_files(directory: str, specs: tuple[FileSpec, ...], mask: Masker) -> list[JSON]:
    """Content blocks for the files a tool wrote into its output directory."""
    blocks: list[JSON] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return blocks
    used: set[str] = set()
    root = os.path.realpath(directory)
    for spec in specs:
        for name in names:
            if name in used or not fnmatch.fnmatchcase(name, spec.glob):
                continue
            used.add(name)
            full = os.path.join(root, name)
            try:
                info = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                blocks.append({"type": "text", "text": f"[{name}: skipped, a symbolic link]"})
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            if info.st_size > spec.max_bytes:
                blocks.append({"type": "text", "text": f"[{name}: skipped, {format_size(info.st_size)} is over "
                                                       f"max_bytes={format_size(spec.max_bytes)}]"})
                continue
            try:
                fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                with os.fdopen(fd, "rb") as fh:
                    data = fh.read(spec.max_bytes + 1)
            except OSError as exc:
                blocks.append({"type": "text", "text": f"[{name}: unreadable: {exc.strerror}]"})
                continue
            mime = spec.mime_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
            kind = _kind_for(mime, spec.as_)
            uri = f"mcp-output:{name}"
            if kind in ("image", "audio"):
                blocks.append({"type": kind, "data": base64.b64encode(data).decode("ascii"), "mimeType": mime})
            elif kind == "text" or (kind == "resource" and _is_text_mime(mime)):
                text = mask(data.decode("utf-8", errors="replace"))
                blocks.append({"type": "resource", "resource": {"uri": uri, "mimeType": mime, "text": text}})
            else:
                blocks.append({"type": "resource", "resource": {
                    "uri": uri, "mimeType": mime, "blob": base64.b64encode(data).decode("ascii")}})
    return blocks
