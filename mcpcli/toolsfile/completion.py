"""`completion/complete` for prompt arguments and resource template variables.

Candidates come from the argument's `complete:` (a fixed list, or a command that
prints one per line with `MCP_COMPLETE_ARG`, `MCP_COMPLETE_VALUE` and the other
arguments as `MCP_ARG_<NAME>`), else its enum. Prefix matches are kept (case
insensitive when no case-sensitive one matches), at most `MAX_COMPLETIONS`.
A completion command that fails yields no candidates, never an error.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from mcpcli.core.jsonrpc import INVALID_PARAMS
from mcpcli.errors import RPCError
from mcpcli.toolsfile.arguments import ArgumentProblems
from mcpcli.toolsfile.model import JSON, PromptArg, RunSpec, ToolsFile
from mcpcli.toolsfile.process import SpawnError
from mcpcli.toolsfile.results import Masker
from mcpcli.toolsfile.runner import Runner

__all__ = ["complete"]

MAX_COMPLETIONS = 100


async def complete(runner: Runner, config: ToolsFile, ref: JSON, argument: JSON, context: JSON,
                   problem: Callable[[str], None]) -> JSON:
    """The CompleteResult; `problem` hears about a completion command that could not run."""
    arg_name = str(argument.get("name", ""))
    value = str(argument.get("value", ""))
    others = (context or {}).get("arguments") or {}
    source = _source(config, ref, arg_name)
    candidates: list[str] = []
    if isinstance(source, (list, tuple)):
        candidates = [str(v) for v in source]
    elif isinstance(source, RunSpec):
        candidates = await _complete_command(runner, config, source, arg_name, value, others, problem)
    matches = [c for c in candidates if c.startswith(value)]
    if not matches and value:
        lowered = value.lower()
        matches = [c for c in candidates if c.lower().startswith(lowered)]
    values = matches[:MAX_COMPLETIONS]
    return {"completion": {"values": values, "total": len(matches), "hasMore": len(matches) > len(values)}}


def _source(config: ToolsFile, ref: JSON, arg_name: str) -> Any:
    """Where the candidates for this argument come from: a list, a `RunSpec`, or None."""
    ref_type = ref.get("type")
    if ref_type == "ref/prompt":
        prompt = config.prompts.get(str(ref.get("name")))
        if prompt is None:
            raise RPCError(INVALID_PARAMS, f"Unknown prompt: {ref.get('name')}")
        arg: PromptArg | None = prompt.arguments.get(arg_name)
        if arg is not None:
            return arg.complete if arg.complete is not None else arg.enum
        return None
    if ref_type == "ref/resource":
        template = next((r for r in config.templates if r.uri_template == ref.get("uri")), None)
        if template is None:
            raise RPCError(INVALID_PARAMS, f"Unknown resource template: {ref.get('uri')}")
        param = template.params.get(arg_name)
        if param is not None:
            return param.complete if param.complete is not None else param.schema.get("enum")
        return None
    raise RPCError(INVALID_PARAMS, f"Unknown completion reference type: {ref_type}")


async def _complete_command(runner: Runner, config: ToolsFile, spec: RunSpec, name: str, value: str,
                            others: JSON, problem: Callable[[str], None]) -> list[str]:
    env = {"MCP_COMPLETE_ARG": name, "MCP_COMPLETE_VALUE": value}
    for key, other in others.items():
        if isinstance(key, str) and isinstance(other, str) and key.isidentifier():
            env["MCP_ARG_" + key.upper()] = other
    mask = Masker(config.secret_values())
    async with AsyncExitStack() as stack:
        if not await runner.acquire(stack, config, "completion", spec.concurrency):
            return []
        try:
            run = await runner.spawn(config, spec, {}, {}, None, mask, stack, tool_name="completion",
                                     output_dir=None, max_bytes=256 * 1024, extra_env=env)
        except (SpawnError, ArgumentProblems) as exc:
            problem(f"completion command failed: {exc}")
            return []
    if run.returncode not in spec.ok_exit_codes:
        return []
    lines = run.stdout.decode("utf-8", "replace").splitlines()
    return [mask(line) for line in lines if line.strip()]
