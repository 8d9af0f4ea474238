"""Build a `RunSpec` (how to start one process) from a `run:` or `command:` mapping.

Checks: exactly one of argv (no shell) or script (with shell); the program is
fixed text; no `{{ }}` in a shell script (values travel as "$MCP_ARG_NAME");
placeholders name declared parameters; array parameters only as whole argv
elements or with `each:`; no parameter mapped into a variable that makes
programs load code (`LD_PRELOAD`, `PYTHONPATH`, ...) and none of those
inherited, unless `unsafe_env: true`; timeouts within `limits.max_timeout`.
"""

from __future__ import annotations

import os
import re
from typing import Any

from mcpcli.toolsfile import templating
from mcpcli.toolsfile.build_context import BuildContext
from mcpcli.toolsfile.model import (
    DEFAULT_CONCURRENCY,
    DEFAULT_INHERIT_ENV,
    DEFAULT_KILL_GRACE,
    DEFAULT_TIMEOUT,
    JSON,
    Each,
    Lit,
    Param,
    RunSpec,
    SecretRef,
    Splat,
    When,
    parse_duration,
)
from mcpcli.toolsfile.yamlstrict import Path

__all__ = ["build_argv", "build_run"]

#: Variables through which a value can make a program load or run other code.
#: A parameter can never be mapped into one of these (unless `unsafe_env: true`).
_CODE_LOADING_ENV = re.compile(
    r"^(?:LD_\w*|DYLD_\w*|BASH_ENV|ENV|BASH_FUNC_\w*|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|IFS|PATH|"
    r"PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PYTHONINSPECT|PYTHONBREAKPOINT|NODE_OPTIONS|NODE_PATH|"
    r"PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|GIT_SSH|GIT_SSH_COMMAND|GIT_EXTERNAL_DIFF|GIT_EXEC_PATH|"
    r"GIT_CONFIG\w*|GIT_ASKPASS|SSH_ASKPASS|PAGER|GIT_PAGER|EDITOR|VISUAL|GCONV_PATH|LOCPATH|"
    r"MALLOC_\w*|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|CLASSPATH|LUA_INIT\w*|TCLLIBPATH|HOSTALIASES|RESOLV_HOST_CONF)$"
)
#: Our own namespace in the child's environment.
_RESERVED_ENV = re.compile(
    r"^MCP_(?:ARG_|SCRIPT|OUTPUT_DIR$|TOOL$|CONFIG_DIR$|COMPLETE_|PROTOCOL_VERSION$|CLIENT_CAPABILITIES$)"
)
_BUILTINS = ("mcp.output_dir", "mcp.config_dir", "mcp.tool", "mcp.python", "mcp.cwd")


def build_run(ctx: BuildContext, run: JSON, path: Path, params: dict[str, Param], *, where: str,
              complete: bool = False, defaults_timeout: float | None = None,
              failed: set[str] | frozenset[str] = frozenset()) -> RunSpec | None:
    """A command; `failed`: declared parameters with problems of their own (see `_failed`)."""
    d = ctx.defaults
    has_argv, has_script = "argv" in run, "script" in run
    if has_argv == has_script:
        ctx.fail(path, "give exactly one of argv (no shell) or script (with shell)")
        return None
    known = set(params) | set(_BUILTINS) | set(failed)
    if "shell" in run and not has_script:
        ctx.fail((*path, "shell"), "shell goes with script")
    if "args" in run and not has_script:
        ctx.fail((*path, "args"), "args go with script (with argv, put them in argv)")
    script_args: tuple[Any, ...] = ()
    if "args" in run and has_script:
        built = build_argv(ctx, run["args"], (*path, "args"), params, known, item=None)
        if built is None:
            return None
        script_args = built
    cwd_text = run.get("cwd", d.get("cwd", "."))
    cwd = ctx.resolve_dir(cwd_text)
    if not os.path.isdir(cwd):
        ctx.warn((*path, "cwd") if "cwd" in run else path, f"working directory {cwd} does not exist")
    argv = None
    if has_argv:
        argv = _program_argv(ctx, run, path, params, known, cwd)
        if argv is None:
            return None
    script = None
    if has_script:
        script = _script(ctx, run, path)
        if script is None:
            return None
    shell = run.get("shell", d.get("shell", "sh")) if has_script else None
    if shell:
        check_executable(ctx, shell, (*path, "shell"), cwd)
    stdin = _stdin(ctx, run, path, params, known)
    if stdin is None:
        return None
    env = _env(ctx, run, path, known)
    inherit = _inherit_env(ctx, run, path)
    timeout = _timeout(ctx, run, path, complete=complete, defaults_timeout=defaults_timeout)
    kill_grace = parse_duration(run.get("kill_grace", d.get("kill_grace", DEFAULT_KILL_GRACE)))
    return RunSpec(
        where=where,
        argv=argv,
        shell=shell,
        args=script_args,
        script=script,
        stdin=stdin[0],
        stdin_param=stdin[1],
        env=tuple(env),
        inherit_env=tuple(inherit),
        cwd=cwd,
        timeout=timeout,
        kill_grace=kill_grace,
        ok_exit_codes=frozenset(run.get("ok_exit_codes", [0])),
        concurrency=run.get("concurrency", d.get("concurrency", DEFAULT_CONCURRENCY)),
    )


def _program_argv(ctx: BuildContext, run: JSON, path: Path, params: dict[str, Param], known: set[str],
                  cwd: str) -> tuple[Any, ...] | None:
    """`run.argv`, whose first element (the program) must be fixed text."""
    argv = build_argv(ctx, run["argv"], (*path, "argv"), params, known, item=None)
    if argv is None:
        return None
    first = run["argv"][0]
    if isinstance(first, str) and templating.PLACEHOLDER.search(first) is None:
        check_executable(ctx, first, (*path, "argv", 0), cwd)
    elif not isinstance(first, str) or not _builtin_only(first):
        ctx.fail((*path, "argv", 0), "the program (argv[0]) must be fixed text, not a parameter")
        return None
    return argv


def _script(ctx: BuildContext, run: JSON, path: Path) -> str | None:
    """`run.script`: shell code with no placeholders and no NUL byte."""
    script: str = run["script"]
    if templating.PLACEHOLDER.search(script) or "{{" in script:
        ctx.fail((*path, "script"), "{{ }} placeholders are not allowed in a shell script",
                 "read the value from \"$MCP_ARG_NAME\" (quoted) instead")
        return None
    if "\x00" in script:
        ctx.fail((*path, "script"), "the script contains a NUL byte")
        return None
    return script


def _stdin(ctx: BuildContext, run: JSON, path: Path, params: dict[str, Param],
           known: set[str]) -> tuple[str, str | None] | None:
    """(mode, parameter) for `run.stdin`: none, json, or exactly one parameter."""
    stdin_text = run.get("stdin", "none")
    if stdin_text in ("none", "json"):
        return stdin_text, None
    tpl = ctx.template(stdin_text, (*path, "stdin"), known)
    if tpl is None:
        return None
    if tpl.whole is not None and _failed(tpl.whole, params, known):
        return None
    if tpl.whole is None or tpl.whole not in params:
        ctx.fail((*path, "stdin"), "stdin must be none, json, or exactly \"{{ param }}\"")
        return None
    if params[tpl.whole].type in ("array", "object"):
        ctx.fail((*path, "stdin"), "use stdin: json for array and object parameters")
    return "param", tpl.whole


def _env(ctx: BuildContext, run: JSON, path: Path, known: set[str]) -> list[tuple[str, Any]]:
    """`defaults.env` merged with `run.env`: (NAME, Template | SecretRef) pairs."""
    env: list[tuple[str, Any]] = []
    unsafe = bool(run.get("unsafe_env", False))
    merged_env = dict(ctx.defaults.get("env") or {})
    merged_env.update(run.get("env") or {})
    for name, value in merged_env.items():
        epath = (*path, "env", name) if name in (run.get("env") or {}) else ("defaults", "env", name)
        if _RESERVED_ENV.match(name):
            ctx.fail(epath, f"{name} is reserved for mcpcli (MCP_ARG_*, MCP_SCRIPT_*...)", key=True)
            continue
        if isinstance(value, dict):
            secret = value["secret"]
            if secret not in (ctx.raw.get("secrets") or {}):
                ctx.fail(epath, f"unknown secret {secret!r}", "declare it under secrets:")
                continue
            env.append((name, SecretRef(secret)))
            continue
        text = templating.stringify(value)
        tpl = ctx.template(text, epath, known)
        if tpl is None:
            continue
        dynamic = [n for n in tpl.names if not n.startswith("mcp.")]
        if dynamic and _CODE_LOADING_ENV.match(name) and not unsafe:
            ctx.fail(epath, f"a parameter cannot be mapped into {name}: it can make programs load code",
                     "use another variable name (or `unsafe_env: true` if you really mean it)", key=True)
            continue
        env.append((name, tpl))
    return env


def _inherit_env(ctx: BuildContext, run: JSON, path: Path) -> list[str]:
    """The server's variables the child inherits: the defaults plus `run.inherit_env`."""
    unsafe = bool(run.get("unsafe_env", False))
    inherit = list(ctx.defaults.get("inherit_env", DEFAULT_INHERIT_ENV))
    for name in run.get("inherit_env", []):
        if name not in inherit:
            inherit.append(name)
    for name in inherit:
        if name != "PATH" and _CODE_LOADING_ENV.match(name) and not unsafe:
            ctx.fail((*path, "inherit_env"), f"inheriting {name} lets the server's environment load code",
                     "remove it (or set `unsafe_env: true`)")
    return inherit


def _timeout(ctx: BuildContext, run: JSON, path: Path, *, complete: bool,
             defaults_timeout: float | None) -> float:
    default_timeout = ctx.defaults.get("timeout")
    timeout = parse_duration(run.get("timeout", default_timeout if default_timeout is not None else
                                     (defaults_timeout or (5.0 if complete else DEFAULT_TIMEOUT))))
    if timeout > ctx.limits.max_timeout:
        ctx.fail((*path, "timeout"), f"timeout {timeout:g}s exceeds limits.max_timeout ({ctx.limits.max_timeout:g}s)")
    if timeout <= 0:
        ctx.fail((*path, "timeout"), "timeout must be positive")
    return timeout


def _builtin_only(text: str) -> bool:
    try:
        tpl = templating.parse(text)
    except ValueError:
        return False
    return all(n in ("mcp.python", "mcp.config_dir") for n in tpl.names)


def check_executable(ctx: BuildContext, program: str, path: Path, cwd: str) -> None:
    """Warn (not fail) when `program` is not found: it may exist where the server runs."""
    import shutil

    if "/" in program:
        full = os.path.join(ctx.base_dir, os.path.expanduser(program))
        if not os.path.exists(full):
            ctx.warn(path, f"program {program} not found (relative to {ctx.base_dir})")
        elif not os.access(full, os.X_OK):
            ctx.warn(path, f"{program} is not executable", f"chmod +x {program}")
        return
    search = ctx.env.get("PATH", os.defpath)
    if shutil.which(program, path=search) is None:
        ctx.warn(path, f"program {program!r} not found on PATH")


def _failed(name: str, params: dict[str, Param], known: set[str]) -> bool:
    """Whether `name` is a declared parameter that had a problem of its own (already reported):
    a name placeholders may use, that is not in `params` (see `build_run`'s `failed`)."""
    return name in known and name not in params and name not in _BUILTINS and name != "item"


def build_argv(ctx: BuildContext, items: list[Any], path: Path, params: dict[str, Param], known: set[str],
               *, item: Param | None) -> tuple[Any, ...] | None:
    """An argv list as Lit / Splat / When / Each elements; None if any element is wrong."""
    out: list[Any] = []
    ok = True
    for i, entry in enumerate(items):
        ipath = (*path, i)
        built: Lit | Splat | When | Each | None
        if isinstance(entry, dict):
            built = _argv_group(ctx, entry, ipath, params, known, item=item)
        else:
            built = _argv_element(ctx, entry, ipath, params, known)
        if built is None:
            ok = False
            continue
        out.append(built)
    return tuple(out) if ok else None


def _argv_group(ctx: BuildContext, entry: JSON, path: Path, params: dict[str, Param], known: set[str],
                *, item: Param | None) -> When | Each | None:
    """`{when: param, argv: [...]}` or `{each: array_param, argv: [...]}`."""
    if "when" in entry:
        name = entry["when"]
        if name not in params:
            if not _failed(name, params, known):
                ctx.fail((*path, "when"), f"unknown parameter {name!r}")
            return None
        sub = build_argv(ctx, entry["argv"], (*path, "argv"), params, known, item=item)
        return None if sub is None else When(name, sub)
    name = entry["each"]
    param = params.get(name)
    if _failed(name, params, known):
        return None
    if param is None or param.type != "array" or param.item is None:
        ctx.fail((*path, "each"), f"each needs an array parameter, not {name!r}")
        return None
    sub = build_argv(ctx, entry["argv"], (*path, "argv"), params, known | {"item"}, item=param.item)
    return None if sub is None else Each(name, sub)


def _argv_element(ctx: BuildContext, entry: Any, path: Path, params: dict[str, Param],
                  known: set[str]) -> Lit | Splat | None:
    """One argv element: text with placeholders, or a whole array parameter."""
    text = templating.stringify(entry)
    tpl = ctx.template(text, path, known)
    if tpl is None:
        return None
    arrays = [n for n in tpl.names if n in params and params[n].type == "array"]
    if arrays:
        if tpl.whole is not None:
            return Splat(tpl.whole)
        ctx.fail(path, f"the array parameter {arrays[0]!r} can only be a whole element "
                       f"(\"{{{{ {arrays[0]} }}}}\") or used with each:")
        return None
    objects = [n for n in tpl.names if n in params and params[n].type == "object"]
    if objects:
        ctx.fail(path, f"the object parameter {objects[0]!r} cannot go in argv",
                 "pass it with stdin: json, or in env as JSON")
        return None
    return Lit(tpl)
