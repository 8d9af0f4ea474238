"""Load a tools.yaml file into an immutable, fully checked `Config` snapshot.

Steps: strict YAML (`yamlstrict`), `${VAR}` interpolation, structural validation
against the published JSON Schema (`structure`, `tools.schema.json`), then semantic checks
(placeholders refer to declared parameters, no `{{ }}` in shell scripts, no
parameter mapped into code-loading variables, defaults valid against their own
schema, secrets resolvable...). Every problem carries `file:line:col`; all of
them are collected and raised together as `ToolsFileError`.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path as FsPath
from typing import Any

from mcpcli.errors import ConfigError
from mcpcli.serve import templating
from mcpcli.serve.model import (
    DEFAULT_CONCURRENCY,
    DEFAULT_INHERIT_ENV,
    DEFAULT_KILL_GRACE,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_MAX_TIMEOUT,
    DEFAULT_QUEUE_TIMEOUT,
    DEFAULT_TIMEOUT,
    JSON,
    Config,
    Each,
    FileSpec,
    Limits,
    Lit,
    Message,
    OutputSpec,
    Param,
    Prompt,
    PromptArg,
    Resource,
    RunSpec,
    SecretRef,
    Splat,
    Tool,
    When,
    parse_duration,
    parse_size,
)
from mcpcli.serve.model import (
    MISSING as _MISSING,
)
from mcpcli.serve.structure import describe_path, schema_problems
from mcpcli.serve.templating import Template
from mcpcli.serve.yamlstrict import Marks, Path, Problem, YamlProblems
from mcpcli.serve.yamlstrict import load as load_yaml

__all__ = ["ToolsFileError", "load_config", "parse_config"]

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
#: Keys whose text is content or shell code, not configuration: no `${VAR}` there.
_NO_INTERPOLATION = {"script", "text", "description", "instructions", "title", "json", "content", "error"}
_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BUILTINS = ("mcp.output_dir", "mcp.config_dir", "mcp.tool", "mcp.python", "mcp.cwd")
_VAR = re.compile(r"\$\$\{|\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ToolsFileError(ConfigError):
    """A tools.yaml file is invalid; `problems` lists every error with its position."""

    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{first.format(None)}{more}", hint=f"check the file with `mcp serve --check {first.file}`")
        self.problems = problems


# -- loading -------------------------------------------------------------------------------


def load_config(path: str | os.PathLike[str], *, environ: dict[str, str] | None = None) -> Config:
    """Read and check a tools.yaml file; raise `ToolsFileError` listing every problem."""
    shown = os.fspath(path)
    try:
        with open(shown, "rb") as fh:
            data = fh.read(16 * 1024 * 1024 + 1)
    except FileNotFoundError:
        raise ConfigError(f"no such file: {shown}") from None
    except IsADirectoryError:
        raise ConfigError(f"{shown} is a directory, not a tools.yaml file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {shown}: {exc.strerror}") from None
    if len(data) > 16 * 1024 * 1024:
        raise ConfigError(f"{shown}: the file is larger than 16 MiB")
    return parse_config(data, shown, environ=environ)


def parse_config(data: bytes | str, path: str, *, environ: dict[str, str] | None = None) -> Config:
    try:
        raw, marks = load_yaml(data, path)
    except YamlProblems as exc:
        raise ToolsFileError(exc.problems) from None
    env = dict(os.environ) if environ is None else environ
    problems: list[Problem] = []
    if not isinstance(raw, dict):
        raise ToolsFileError([marks.problem((), "the file must be a mapping with `version: 1` and `tools:`")])
    raw = _interpolate(raw, (), marks, env, problems)
    if problems:
        raise ToolsFileError(problems)
    problems.extend(schema_problems(raw, marks))
    if problems:
        raise ToolsFileError(_dedupe(problems))
    builder = _Builder(raw, marks, path, env)
    config = builder.build()
    if builder.problems:
        raise ToolsFileError(_dedupe(builder.problems))
    return config


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[int, int, str]] = set()
    out = []
    for p in sorted(problems, key=lambda p: (p.line, p.col)):
        key = (p.line, p.col, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _interpolate(value: Any, path: Path, marks: Marks, env: dict[str, str], problems: list[Problem]) -> Any:
    if isinstance(value, dict):
        return {
            k: (v if k in _NO_INTERPOLATION else _interpolate(v, (*path, k), marks, env, problems))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_interpolate(v, (*path, i), marks, env, problems) for i, v in enumerate(value)]
    if not isinstance(value, str) or "$" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        problems.append(marks.problem(
            path, f"environment variable {name} is not set", f"export it, or write ${{{name}:-default}}"
        ))
        return ""

    return _VAR.sub(replace, value)


# -- semantic building ---------------------------------------------------------------------


class _Builder:
    def __init__(self, raw: JSON, marks: Marks, path: str, env: dict[str, str]) -> None:
        self.raw = raw
        self.marks = marks
        self.file = path
        self.env = env
        self.base_dir = os.path.dirname(os.path.abspath(path))
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.secrets: dict[str, str] = {}
        defaults = raw.get("defaults") or {}
        self.defaults = defaults
        limits = raw.get("limits") or {}
        self.limits = Limits(
            max_concurrent=limits.get("max_concurrent", DEFAULT_MAX_CONCURRENT),
            queue_timeout=self.duration(limits, "queue_timeout", ("limits",), DEFAULT_QUEUE_TIMEOUT),
            max_timeout=self.duration(limits, "max_timeout", ("limits",), DEFAULT_MAX_TIMEOUT),
        )

    # helpers
    def fail(self, path: Path, message: str, hint: str | None = None, *, key: bool = False) -> None:
        where = describe_path(path, self.raw)
        self.problems.append(self.marks.problem(path, f"{where}: {message}", hint, key=key))

    def warn(self, path: Path, message: str, hint: str | None = None) -> None:
        where = describe_path(path, self.raw)
        line, col = self.marks.at(path)
        self.warnings.append(Problem(self.file, line, col, f"{where}: {message}", hint))

    def duration(self, section: JSON, key: str, path: Path, default: float) -> float:
        if key not in section:
            return default
        try:
            return parse_duration(section[key])
        except ValueError:
            self.fail((*path, key), "bad duration")
            return default

    def size(self, section: JSON, key: str, path: Path, default: int) -> int:
        if key not in section:
            return default
        try:
            return parse_size(section[key])
        except ValueError:
            self.fail((*path, key), "bad size")
            return default

    def resolve_dir(self, text: str) -> str:
        return os.path.normpath(os.path.join(self.base_dir, os.path.expanduser(text)))

    # top level
    def build(self) -> Config:
        raw = self.raw
        self.build_secrets()
        server = dict(raw.get("server") or {})
        info: JSON = {"name": server.get("name") or FsPath(self.file).stem,
                      "version": server.get("version") or "0"}
        if server.get("title"):
            info["title"] = server["title"]
        if server.get("website_url"):
            info["websiteUrl"] = server["website_url"]
        tools: dict[str, Tool] = {}
        for i, item in enumerate(raw.get("tools") or []):
            path = ("tools", i)
            if item.get("enabled") is False:
                continue
            tool = self.build_tool(item, path)
            if tool is None:
                continue
            if tool.name in tools:
                self.fail((*path, "name"), f"duplicate tool name {tool.name!r}")
                continue
            tools[tool.name] = tool
        resources: list[Resource] = []
        seen_uris: set[str] = set()
        for i, item in enumerate(raw.get("resources") or []):
            res = self.build_resource(item, ("resources", i))
            if res is None:
                continue
            key = res.uri_template if res.kind == "template" else f"{res.kind}:{res.uri}"
            if key in seen_uris:
                self.fail(("resources", i), f"duplicate resource {key!r}")
                continue
            seen_uris.add(key or "")
            resources.append(res)
        prompts: dict[str, Prompt] = {}
        for i, item in enumerate(raw.get("prompts") or []):
            prompt = self.build_prompt(item, ("prompts", i))
            if prompt is None:
                continue
            if prompt.name in prompts:
                self.fail(("prompts", i, "name"), f"duplicate prompt name {prompt.name!r}")
                continue
            prompts[prompt.name] = prompt
        return Config(
            path=self.file,
            base_dir=self.base_dir,
            server=info,
            instructions=server.get("instructions"),
            limits=self.limits,
            secrets=dict(self.secrets),
            tools=tools,
            resources=tuple(resources),
            prompts=prompts,
            warnings=tuple(self.warnings),
        )

    def build_secrets(self) -> None:
        for name, spec in (self.raw.get("secrets") or {}).items():
            path = ("secrets", name)
            required = spec.get("required", True)
            sources = [k for k in ("from_env", "from_file") if k in spec]
            if len(sources) != 1:
                self.fail(path, "give exactly one of from_env or from_file", key=True)
                continue
            value: str | None = None
            if "from_env" in spec:
                value = self.env.get(spec["from_env"])
                missing = f"environment variable {spec['from_env']} is not set"
            else:
                file = os.path.join(self.base_dir, os.path.expanduser(spec["from_file"]))
                missing = f"cannot read {spec['from_file']}"
                try:
                    with open(file, encoding="utf-8") as fh:
                        value = fh.read().rstrip("\r\n")
                except (OSError, UnicodeDecodeError) as exc:
                    missing = f"cannot read {spec['from_file']}: {getattr(exc, 'strerror', None) or exc}"
            if value is None or value == "":
                if required:
                    self.fail(path, f"secret {name}: {missing}", "or mark it `required: false`", key=True)
                continue
            if "\x00" in value:
                self.fail(path, f"secret {name} contains a NUL byte", key=True)
                continue
            self.secrets[name] = value

    # parameters
    def build_params(self, raw: JSON, path: Path, cwd: str, *, template: bool = False) -> dict[str, Param]:
        params: dict[str, Param] = {}
        env_names: dict[str, str] = {}
        for name, spec in raw.items():
            ppath = (*path, name)
            if not _PARAM_NAME.match(name):
                self.fail(ppath, f"parameter name {name!r} must be letters, digits and _ (not starting with a digit)", key=True)
                continue
            if name in ("mcp", "item"):
                self.fail(ppath, f"parameter name {name!r} is reserved", key=True)
                continue
            upper = name.upper()
            if upper in env_names:
                self.fail(ppath, f"parameters {env_names[upper]!r} and {name!r} both map to MCP_ARG_{upper}", key=True)
                continue
            env_names[upper] = name
            param = self.build_param(name, spec or {}, ppath, cwd, template=template)
            if param is not None:
                params[name] = param
        return params

    def build_param(self, name: str, spec: JSON, path: Path, cwd: str, *, template: bool = False,
                    is_item: bool = False) -> Param | None:
        ptype = spec.get("type", "string")
        schema: JSON = {}
        schema["type"] = "string" if ptype == "path" else ptype
        for key in ("title", "description", "enum", "const", "minLength", "maxLength", "format",
                    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                    "minItems", "maxItems", "uniqueItems", "examples"):
            if key in spec:
                schema[key] = spec[key]
        if "pattern" in spec:
            pattern = spec["pattern"]
            try:
                re.compile(pattern)
            except re.error as exc:
                self.fail((*path, "pattern"), f"invalid regular expression: {exc}")
                return None
            if ptype not in ("string", "path"):
                self.fail((*path, "pattern"), "pattern applies to string and path parameters only")
            schema["pattern"] = f"^(?:{pattern})$"
        string_keys = ("minLength", "maxLength", "pattern", "format")
        number_keys = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
        array_keys = ("minItems", "maxItems", "uniqueItems", "items")
        path_keys = ("within", "must_exist", "kind")
        for keys, types, what in ((string_keys, ("string", "path"), "string"),
                                  (number_keys, ("integer", "number"), "number"),
                                  (array_keys, ("array",), "array"),
                                  (path_keys, ("path",), "path")):
            for key in keys:
                if key in spec and ptype not in types:
                    self.fail((*path, key), f"{key} applies to {what} parameters only (this one is {ptype})")
        if ptype == "path" and "format" not in schema:
            pass
        within: tuple[str, ...] = ()
        if ptype == "path":
            roots = spec.get("within", [])
            roots = [roots] if isinstance(roots, str) else list(roots)
            if not roots:
                within = (os.path.realpath(cwd),)
            else:
                within = tuple(os.path.realpath(self.resolve_dir(r)) for r in roots)
            for root in within:
                if not os.path.isdir(root):
                    self.warn((*path, "within") if roots else path, f"root directory {root} does not exist")
            note = "A path inside " + ", ".join(within)
            schema["description"] = (schema.get("description", "").rstrip(". ") + ". " + note).lstrip(". ")
        item = None
        if ptype == "array":
            item_spec = spec.get("items") or {"type": "string"}
            item = self.build_param(name, item_spec, (*path, "items"), cwd, is_item=True)
            if item is None:
                return None
            schema["items"] = item.schema
        if "schema" in spec:
            extra = spec["schema"]
            for key, value in extra.items():
                if key == "type":
                    continue
                schema[key] = value
        if ptype == "object" and "schema" not in spec:
            schema.setdefault("additionalProperties", True)
        try:
            from mcpcli.validation import compile_schema

            validator = compile_schema(schema)
        except ConfigError as exc:
            self.fail(path, f"invalid schema: {exc.message}")
            return None
        except Exception as exc:
            self.fail(path, f"invalid schema: {exc}")
            return None
        required = spec.get("required", "default" not in spec)
        default = spec.get("default", _MISSING)
        if default is not _MISSING:
            if default is None:
                self.fail((*path, "default"), "a default cannot be null (leave it out, and set required: false)")
                return None
            schema["default"] = default
            problems = [m for _, m in _validation_errors(validator, default)]
            if problems:
                self.fail((*path, "default"), f"the default {json.dumps(default)} is invalid: {problems[0]}")
            if required and "required" in spec:
                self.fail((*path, "required"), "a parameter with a default cannot be required")
        if template and ptype not in ("string", "integer", "number", "path"):
            self.fail(path, "template parameters must be string, integer, number or path")
        if ptype == "object" and not is_item:
            pass
        complete = None
        if "complete" in spec:
            complete = self.build_complete(spec["complete"], (*path, "complete"))
        return Param(
            name=name,
            type=ptype,
            required=bool(required),
            default=default,
            schema=schema,
            within=within,
            must_exist=bool(spec.get("must_exist", False)),
            kind=spec.get("kind", "any"),
            allow_leading_dash=bool(spec.get("allow_leading_dash", False)),
            item=item,
            complete=complete,
        )

    def build_complete(self, spec: Any, path: Path) -> Any:
        if isinstance(spec, list):
            return tuple(str(v) for v in spec)
        return self.build_run(spec, path, {}, where=describe_path(path, self.raw), complete=True)

    # processes
    def build_run(self, run: JSON, path: Path, params: dict[str, Param], *, where: str,
                  complete: bool = False, defaults_timeout: float | None = None) -> RunSpec | None:
        d = self.defaults
        has_argv, has_script = "argv" in run, "script" in run
        if has_argv == has_script:
            self.fail(path, "give exactly one of argv (no shell) or script (with shell)")
            return None
        known = set(params) | set(_BUILTINS)
        if "shell" in run and not has_script:
            self.fail((*path, "shell"), "shell goes with script")
        if "args" in run and not has_script:
            self.fail((*path, "args"), "args go with script (with argv, put them in argv)")
        script_args: tuple[Any, ...] = ()
        if "args" in run and has_script:
            built = self.build_argv(run["args"], (*path, "args"), params, known, item=None)
            if built is None:
                return None
            script_args = built
        cwd_text = run.get("cwd", d.get("cwd", "."))
        cwd = self.resolve_dir(cwd_text)
        if not os.path.isdir(cwd):
            self.warn((*path, "cwd") if "cwd" in run else path, f"working directory {cwd} does not exist")
        argv = None
        if has_argv:
            argv = self.build_argv(run["argv"], (*path, "argv"), params, known, item=None)
            if argv is None:
                return None
            first = run["argv"][0]
            if isinstance(first, str) and templating.PLACEHOLDER.search(first) is None:
                self.check_executable(first, (*path, "argv", 0), cwd)
            elif not isinstance(first, str) or not self._builtin_only(first):
                self.fail((*path, "argv", 0), "the program (argv[0]) must be fixed text, not a parameter")
                return None
        script = None
        if has_script:
            script = run["script"]
            if templating.PLACEHOLDER.search(script) or "{{" in script:
                self.fail((*path, "script"), "{{ }} placeholders are not allowed in a shell script",
                          "read the value from \"$MCP_ARG_NAME\" (quoted) instead")
                return None
            if "\x00" in script:
                self.fail((*path, "script"), "the script contains a NUL byte")
                return None
        shell = run.get("shell", d.get("shell", "sh")) if has_script else None
        if shell:
            self.check_executable(shell, (*path, "shell"), cwd)
        stdin_text = run.get("stdin", "none")
        stdin, stdin_param = "none", None
        if stdin_text in ("none", "json"):
            stdin = stdin_text
        else:
            tpl = self.template(stdin_text, (*path, "stdin"), known)
            if tpl is None:
                return None
            if tpl.whole is None or tpl.whole not in params:
                self.fail((*path, "stdin"), "stdin must be none, json, or exactly \"{{ param }}\"")
                return None
            stdin, stdin_param = "param", tpl.whole
            if params[tpl.whole].type in ("array", "object"):
                self.fail((*path, "stdin"), "use stdin: json for array and object parameters")
        env: list[tuple[str, Any]] = []
        unsafe = bool(run.get("unsafe_env", False))
        merged_env = dict(d.get("env") or {})
        merged_env.update(run.get("env") or {})
        for name, value in merged_env.items():
            epath = (*path, "env", name) if name in (run.get("env") or {}) else ("defaults", "env", name)
            if _RESERVED_ENV.match(name):
                self.fail(epath, f"{name} is reserved for mcpcli (MCP_ARG_*, MCP_SCRIPT_*...)", key=True)
                continue
            if isinstance(value, dict):
                secret = value["secret"]
                if secret not in (self.raw.get("secrets") or {}):
                    self.fail(epath, f"unknown secret {secret!r}", "declare it under secrets:")
                    continue
                env.append((name, SecretRef(secret)))
                continue
            text = templating.stringify(value)
            tpl = self.template(text, epath, known)
            if tpl is None:
                continue
            dynamic = [n for n in tpl.names if not n.startswith("mcp.")]
            if dynamic and _CODE_LOADING_ENV.match(name) and not unsafe:
                self.fail(epath, f"a parameter cannot be mapped into {name}: it can make programs load code",
                          "use another variable name (or `unsafe_env: true` if you really mean it)", key=True)
                continue
            for ref in dynamic:
                if params.get(ref) is not None and params[ref].type in ("array",):
                    pass
            env.append((name, tpl))
        inherit = list(d.get("inherit_env", DEFAULT_INHERIT_ENV))
        for name in run.get("inherit_env", []):
            if name not in inherit:
                inherit.append(name)
        for name in inherit:
            if name != "PATH" and _CODE_LOADING_ENV.match(name) and not unsafe:
                self.fail((*path, "inherit_env"), f"inheriting {name} lets the server's environment load code",
                          "remove it (or set `unsafe_env: true`)")
        default_timeout = d.get("timeout")
        timeout = parse_duration(run.get("timeout", default_timeout if default_timeout is not None else
                                          (defaults_timeout or (5.0 if complete else DEFAULT_TIMEOUT))))
        if timeout > self.limits.max_timeout:
            self.fail((*path, "timeout"), f"timeout {timeout:g}s exceeds limits.max_timeout ({self.limits.max_timeout:g}s)")
        if timeout <= 0:
            self.fail((*path, "timeout"), "timeout must be positive")
        kill_grace = parse_duration(run.get("kill_grace", d.get("kill_grace", DEFAULT_KILL_GRACE)))
        return RunSpec(
            where=where,
            argv=argv,
            shell=shell,
            args=script_args,
            script=script,
            stdin=stdin,
            stdin_param=stdin_param,
            env=tuple(env),
            inherit_env=tuple(inherit),
            cwd=cwd,
            timeout=timeout,
            kill_grace=kill_grace,
            ok_exit_codes=frozenset(run.get("ok_exit_codes", [0])),
            concurrency=run.get("concurrency", d.get("concurrency", DEFAULT_CONCURRENCY)),
        )

    def _builtin_only(self, text: str) -> bool:
        try:
            tpl = templating.parse(text)
        except ValueError:
            return False
        return all(n in ("mcp.python", "mcp.config_dir") for n in tpl.names)

    def check_executable(self, program: str, path: Path, cwd: str) -> None:
        import shutil

        if "/" in program:
            full = os.path.join(self.base_dir, os.path.expanduser(program))
            if not os.path.exists(full):
                self.warn(path, f"program {program} not found (relative to {self.base_dir})")
            elif not os.access(full, os.X_OK):
                self.warn(path, f"{program} is not executable", f"chmod +x {program}")
            return
        search = self.env.get("PATH", os.defpath)
        if shutil.which(program, path=search) is None:
            self.warn(path, f"program {program!r} not found on PATH")

    def template(self, text: str, path: Path, known: set[str]) -> Template | None:
        try:
            tpl = templating.parse(text)
        except ValueError as exc:
            self.fail(path, str(exc))
            return None
        for name in tpl.names:
            if name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=1)
                hint = f"did you mean {close[0]!r}?" if close else "declare it under params:"
                self.fail(path, f"unknown placeholder {{{{ {name} }}}}", hint)
                return None
        return tpl

    def build_argv(self, items: list[Any], path: Path, params: dict[str, Param], known: set[str],
                   *, item: Param | None) -> tuple[Any, ...] | None:
        out: list[Any] = []
        ok = True
        for i, entry in enumerate(items):
            ipath = (*path, i)
            if isinstance(entry, dict):
                if "when" in entry:
                    name = entry["when"]
                    if name not in params:
                        self.fail((*ipath, "when"), f"unknown parameter {name!r}")
                        ok = False
                        continue
                    sub = self.build_argv(entry["argv"], (*ipath, "argv"), params, known, item=item)
                    if sub is None:
                        ok = False
                        continue
                    out.append(When(name, sub))
                    continue
                name = entry["each"]
                param = params.get(name)
                if param is None or param.type != "array" or param.item is None:
                    self.fail((*ipath, "each"), f"each needs an array parameter, not {name!r}")
                    ok = False
                    continue
                sub = self.build_argv(entry["argv"], (*ipath, "argv"), params, known | {"item"}, item=param.item)
                if sub is None:
                    ok = False
                    continue
                out.append(Each(name, sub))
                continue
            text = templating.stringify(entry)
            tpl = self.template(text, ipath, known)
            if tpl is None:
                ok = False
                continue
            arrays = [n for n in tpl.names if n in params and params[n].type == "array"]
            if arrays:
                if tpl.whole is not None:
                    out.append(Splat(tpl.whole))
                    continue
                self.fail(ipath, f"the array parameter {arrays[0]!r} can only be a whole element "
                                 f"(\"{{{{ {arrays[0]} }}}}\") or used with each:")
                ok = False
                continue
            objects = [n for n in tpl.names if n in params and params[n].type == "object"]
            if objects:
                self.fail(ipath, f"the object parameter {objects[0]!r} cannot go in argv",
                          "pass it with stdin: json, or in env as JSON")
                ok = False
                continue
            out.append(Lit(tpl))
        return tuple(out) if ok else None

    # tools
    def build_tool(self, item: JSON, path: Path) -> Tool | None:
        name = item["name"]
        where = f"tool {name!r}"
        run_raw = item.get("run")
        mock = item.get("mock")
        if (run_raw is None) == (mock is None):
            self.fail(path, "give exactly one of run: (a command) or mock: (a canned answer)")
            return None
        cwd = self.resolve_dir((run_raw or {}).get("cwd", self.defaults.get("cwd", ".")))
        raw_schema = item.get("input_schema")
        if raw_schema is not None:
            if "params" in item:
                self.fail((*path, "input_schema"), "give params or input_schema, not both")
                return None
            if raw_schema.get("type") != "object":
                self.fail((*path, "input_schema"), "the input schema must have type: object")
                return None
            try:
                from mcpcli.validation import compile_schema

                compile_schema(raw_schema)
            except ConfigError as exc:
                self.fail((*path, "input_schema"), f"invalid schema: {exc.message}")
                return None
            if run_raw is not None and run_raw.get("stdin") != "json":
                self.fail((*path, "input_schema"), "a tool with input_schema reads its arguments with stdin: json")
                return None
        params = self.build_params(item.get("params") or {}, (*path, "params"), cwd)
        if len(params) != len(item.get("params") or {}):
            return None
        run = None
        if run_raw is not None:
            run = self.build_run(run_raw, (*path, "run"), params, where=where)
            if run is None:
                return None
        if mock is not None:
            kinds = [k for k in ("text", "json", "content", "error") if k in mock]
            if len(kinds) != 1:
                self.fail((*path, "mock"), "give exactly one of text, json, content or error")
                return None
            for key in ("text", "error"):
                known = set(params) | {"mcp.tool"}
                if key in mock and self.template(mock[key], (*path, "mock", key), known) is None:
                    return None
        output = self.build_output(item.get("output") or {}, (*path, "output"))
        if output is None:
            return None
        if output.files and run is not None and not run.uses_output_dir:
            pass  # MCP_OUTPUT_DIR is always exported when files: is set
        return Tool(
            name=name,
            description=item["description"],
            params=params,
            run=run,
            mock=mock,
            output=output,
            title=item.get("title"),
            annotations=item.get("annotations"),
            icons=item.get("icons"),
            meta=item.get("_meta"),
            requires=tuple(item.get("requires", ())),
            raw_input_schema=raw_schema,
        )

    def build_output(self, raw: JSON, path: Path) -> OutputSpec | None:
        d = self.defaults
        fmt = raw.get("format", "text")
        mime = raw.get("mime_type")
        if fmt in ("image", "audio", "blob") and not mime:
            self.fail(path, f"format {fmt} needs a mime_type (e.g. image/png)")
            return None
        schema = raw.get("schema")
        if schema is not None:
            if fmt != "json":
                self.fail((*path, "schema"), "schema (the outputSchema) goes with format: json")
                return None
            try:
                from mcpcli.validation import compile_schema

                compile_schema(schema)
            except ConfigError as exc:
                self.fail((*path, "schema"), f"invalid output schema: {exc.message}")
                return None
            if schema.get("type") != "object":
                self.fail((*path, "schema"), "the output schema must describe an object (type: object)",
                          "wrap other values in an object")
                return None
        max_bytes = self.size(raw, "max_bytes", path, self.size(d, "max_bytes", ("defaults",), DEFAULT_MAX_BYTES))
        files = []
        for i, spec in enumerate(raw.get("files") or []):
            files.append(FileSpec(
                glob=spec["glob"],
                mime_type=spec.get("mime_type"),
                as_=spec.get("as", "auto"),
                max_bytes=self.size(spec, "max_bytes", (*path, "files", i), max_bytes),
            ))
        return OutputSpec(
            format=fmt,
            mime_type=mime,
            schema=schema,
            stderr=raw.get("stderr", d.get("stderr", "on_error")),
            max_bytes=max_bytes,
            on_overflow=raw.get("on_overflow", "truncate"),
            files=tuple(files),
        )

    # resources
    def build_resource(self, item: JSON, path: Path) -> Resource | None:
        sources = [k for k in ("file", "directory", "command", "text") if k in item]
        if len(sources) != 1:
            self.fail(path, "give exactly one of file, directory, command or text")
            return None
        source = sources[0]
        has_uri, has_tpl = "uri" in item, "uri_template" in item
        if has_uri and has_tpl:
            self.fail(path, "give uri or uri_template, not both")
            return None
        common: JSON = {
            "mime_type": item.get("mime_type"),
            "title": item.get("title"),
            "description": item.get("description"),
            "annotations": item.get("annotations"),
            "icons": item.get("icons"),
        }
        if has_tpl:
            return self.build_template(item, path, source, common)
        if "params" in item:
            self.fail((*path, "params"), "params go with uri_template")
            return None
        if source == "directory":
            directory = self.resolve_dir(item["directory"])
            if not os.path.isdir(directory):
                self.warn((*path, "directory"), f"directory {directory} does not exist")
            prefix = item.get("uri") or ("file://" + _quote_path(os.path.realpath(directory)) + "/")
            if not prefix.endswith("/"):
                self.fail((*path, "uri"), "the uri of a directory resource is a prefix and must end with /")
                return None
            return Resource(kind="directory", name=item.get("name") or item["directory"], uri=prefix,
                            uri_template=None, source="directory", directory=directory,
                            glob=item.get("glob", "*"), **common)
        if "glob" in item:
            self.fail((*path, "glob"), "glob goes with directory")
        uri = item.get("uri")
        file_tpl = None
        if source == "file":
            full = self.resolve_dir(item["file"])
            if templating.PLACEHOLDER.search(item["file"]):
                self.fail((*path, "file"), "placeholders in file need a uri_template")
                return None
            if not os.path.isfile(full):
                self.warn((*path, "file"), f"file {full} does not exist")
            file_tpl = templating.parse(full, strict=False)
            uri = uri or "file://" + _quote_path(os.path.realpath(full))
        if uri is None:
            self.fail(path, "a resource needs a uri")
            return None
        if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", uri):
            self.fail((*path, "uri"), f"{uri!r} is not a URI (scheme:...)")
            return None
        name = item.get("name")
        if not name:
            self.fail(path, "missing required key 'name'")
            return None
        text = templating.parse(item["text"], strict=False) if source == "text" else None
        command = None
        if source == "command":
            command = self.build_run(item["command"], (*path, "command"), {}, where=f"resource {uri!r}")
            if command is None:
                return None
        return Resource(kind="static", name=name, uri=uri, uri_template=None, source=source,
                        file=file_tpl, text=text, command=command, subscribe=bool(item.get("subscribe")),
                        **common)

    def build_template(self, item: JSON, path: Path, source: str, common: JSON) -> Resource | None:
        template = item["uri_template"]
        names = re.findall(r"\{([+]?)([A-Za-z_][A-Za-z0-9_]*)\}", template)
        leftovers = re.sub(r"\{[+]?[A-Za-z_][A-Za-z0-9_]*\}", "", template)
        if "{" in leftovers or "}" in leftovers:
            self.fail((*path, "uri_template"), "only {name} and {+name} expressions are supported")
            return None
        if not names:
            self.fail((*path, "uri_template"), "a uri_template needs at least one {name}")
            return None
        if source == "directory":
            self.fail(path, "a directory cannot be a template")
            return None
        declared = item.get("params") or {}
        raw_params = {n: declared.get(n, {"type": "string"}) for _, n in names}
        for extra in declared:
            if extra not in raw_params:
                self.fail((*path, "params", extra), f"{extra!r} does not appear in the uri_template", key=True)
                return None
        params = self.build_params(raw_params, (*path, "params"), self.base_dir, template=True)
        if len(params) != len(raw_params):
            return None
        regex = ""
        pos = 0
        for match in re.finditer(r"\{([+]?)([A-Za-z_][A-Za-z0-9_]*)\}", template):
            regex += re.escape(template[pos:match.start()])
            regex += f"(?P<{match.group(2)}>.+)" if match.group(1) else f"(?P<{match.group(2)}>[^/?#]+)"
            pos = match.end()
        regex += re.escape(template[pos:])
        known = set(params) | {"mcp.config_dir"}
        file_tpl = text = None
        command = None
        file_root = None
        if source == "file":
            raw_file = item["file"]
            file_tpl = self.template(os.path.join(self.base_dir, raw_file), (*path, "file"), known)
            if file_tpl is None:
                return None
            literal = file_tpl.parts[0].text if file_tpl.parts and file_tpl.parts[0].name is None else ""
            root = os.path.dirname(literal) if not literal.endswith("/") else literal
            file_root = os.path.realpath(root or self.base_dir)
        elif source == "text":
            text = self.template(item["text"], (*path, "text"), known)
            if text is None:
                return None
        else:
            command = self.build_run(item["command"], (*path, "command"), params, where=f"resource {template!r}")
            if command is None:
                return None
        name = item.get("name")
        if not name:
            self.fail(path, "missing required key 'name'")
            return None
        if "subscribe" in item:
            self.fail((*path, "subscribe"), "subscribe goes with file resources")
        return Resource(kind="template", name=name, uri=None, uri_template=template, source=source,
                        file=file_tpl, text=text, command=command, params=params,
                        matcher=re.compile(regex), file_root=file_root, **common)

    # prompts
    def build_prompt(self, item: JSON, path: Path) -> Prompt | None:
        name = item["name"]
        args: dict[str, PromptArg] = {}
        for arg_name, spec in (item.get("arguments") or {}).items():
            apath = (*path, "arguments", arg_name)
            if not _PARAM_NAME.match(arg_name):
                self.fail(apath, f"argument name {arg_name!r} must be letters, digits and _", key=True)
                continue
            spec = spec or {}
            pattern = None
            if "pattern" in spec:
                try:
                    pattern = re.compile(f"(?:{spec['pattern']})")
                except re.error as exc:
                    self.fail((*apath, "pattern"), f"invalid regular expression: {exc}")
                    continue
            required = spec.get("required", "default" not in spec)
            complete = self.build_complete(spec["complete"], (*apath, "complete")) if "complete" in spec else None
            args[arg_name] = PromptArg(
                name=arg_name, description=spec.get("description"), title=spec.get("title"),
                required=bool(required), default=spec.get("default"),
                enum=tuple(spec["enum"]) if "enum" in spec else None, pattern=pattern,
                max_length=spec.get("maxLength"), complete=complete,
            )
        if len(args) != len(item.get("arguments") or {}):
            return None
        has_messages, has_run = "messages" in item, "run" in item
        if has_messages == has_run:
            self.fail(path, "give exactly one of messages: or run:")
            return None
        known = set(args)
        messages: list[Message] = []
        run = None
        fmt = (item.get("output") or {}).get("format", "text")
        max_bytes = self.size(item.get("output") or {}, "max_bytes", (*path, "output"), DEFAULT_MAX_BYTES)
        if has_run:
            fake_params = {
                n: Param(n, "string", a.required, a.default if a.default is not None else _MISSING, {"type": "string"})
                for n, a in args.items()
            }
            run = self.build_run(item["run"], (*path, "run"), fake_params, where=f"prompt {name!r}")
            if run is None:
                return None
        for i, msg in enumerate(item.get("messages") or []):
            mpath = (*path, "messages", i)
            role = msg.get("role", "user")
            kinds = [k for k in ("text", "file", "image", "audio", "resource") if k in msg]
            if len(kinds) != 1:
                self.fail(mpath, "give exactly one of text, file, image, audio or resource")
                return None
            kind = kinds[0]
            if kind == "text":
                tpl = self.template(msg["text"], (*mpath, "text"), known)
                if tpl is None:
                    return None
                messages.append(Message(role, "text", text=tpl))
            elif kind in ("file", "image", "audio"):
                full = self.resolve_dir(msg[kind])
                if not os.path.isfile(full):
                    self.warn((*mpath, kind), f"file {full} does not exist")
                messages.append(Message(role, kind, path=full, mime_type=msg.get("mime_type")))
            else:
                res = msg["resource"]
                if isinstance(res, str):
                    uri = self.template(res, (*mpath, "resource"), known)
                    if uri is None:
                        return None
                    messages.append(Message(role, "resource_uri", uri=uri))
                else:
                    uri = self.template(res["uri"], (*mpath, "resource", "uri"), known)
                    if uri is None:
                        return None
                    if ("text" in res) == ("file" in res):
                        self.fail((*mpath, "resource"), "an inline resource needs exactly one of text or file")
                        return None
                    text = None
                    fpath = None
                    if "text" in res:
                        text = self.template(res["text"], (*mpath, "resource", "text"), known)
                        if text is None:
                            return None
                    else:
                        fpath = self.resolve_dir(res["file"])
                    messages.append(Message(role, "resource_inline", text=text, path=fpath, uri=uri,
                                            mime_type=res.get("mime_type") or msg.get("mime_type")))
        return Prompt(
            name=name, arguments=args, messages=tuple(messages), run=run, output_format=fmt,
            max_bytes=max_bytes, title=item.get("title"), description=item.get("description"),
            icons=item.get("icons"), requires=tuple(item.get("requires", ())),
        )


def _quote_path(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/")


def _validation_errors(validator: Any, instance: Any) -> list[tuple[str, str]]:
    from mcpcli.validation import errors

    return errors(validator, instance)
