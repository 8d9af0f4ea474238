"""Load a tools.yaml file into an immutable, fully checked `ToolsFile` snapshot.

Steps: strict YAML (`yamlstrict`), `${VAR}` interpolation, structural validation
against the published JSON Schema (`structure`, `tools.schema.json`), then
semantic checks while building the model (`build`: placeholders refer to
declared parameters, no `{{ }}` in shell scripts, no parameter mapped into
code-loading variables, defaults valid against their own schema, secrets
resolvable...). Every problem carries `file:line:col`; all of them, from every
step, are collected and raised together as `ToolsFileError`, in file order.
"""

from __future__ import annotations

import os
import re
from typing import Any

from mcpcli.errors import ConfigError
from mcpcli.toolsfile.build import build_config
from mcpcli.toolsfile.model import ToolsFile
from mcpcli.toolsfile.structure import schema_problems
from mcpcli.toolsfile.yamlstrict import Marks, Path, Problem, YamlProblems
from mcpcli.toolsfile.yamlstrict import read as read_yaml

__all__ = ["ToolsFileError", "load_config", "parse_config"]

#: Keys whose text is content or shell code, not configuration: no `${VAR}` there.
_NO_INTERPOLATION = {"script", "text", "description", "instructions", "title", "json", "content", "error"}
_VAR = re.compile(r"\$\$\{|\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ToolsFileError(ConfigError):
    """A tools.yaml file is invalid; `problems` lists every error with its position."""

    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{first.format(None)}{more}", hint=f"check the file with `mcp serve --check {first.file}`")
        self.problems = problems


def load_config(path: str | os.PathLike[str], *, environ: dict[str, str] | None = None) -> ToolsFile:
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


def parse_config(data: bytes | str, path: str, *, environ: dict[str, str] | None = None) -> ToolsFile:
    """Check a tools.yaml document; raise `ToolsFileError` listing every problem, in file order.

    Each step goes on after the problems of the one before (a value one step refused is
    None for the next, and what follows from it is not reported twice); only a file that
    is not YAML at all stops at once.
    """
    try:
        document = read_yaml(data, path)
    except YamlProblems as exc:
        raise ToolsFileError(exc.problems) from None
    raw, marks = document.value, document.marks
    problems, bad = list(document.problems), set(document.bad)
    if not isinstance(raw, dict):
        raise ToolsFileError(
            _dedupe([*problems, marks.problem((), "the file must be a mapping with `version: 1` and `tools:`")]))
    env = dict(os.environ) if environ is None else environ
    raw = _interpolate(raw, (), marks, env, problems, bad)
    problems.extend(schema_problems(raw, marks, bad))
    config, found = build_config(raw, marks, path, env, reported=bool(problems), bad=bad)
    problems.extend(found)
    if problems:
        raise ToolsFileError(_dedupe(problems))
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


def _interpolate(value: Any, path: Path, marks: Marks, env: dict[str, str], problems: list[Problem],
                 bad: set[Path]) -> Any:
    if isinstance(value, dict):
        return {
            k: (v if k in _NO_INTERPOLATION else _interpolate(v, (*path, k), marks, env, problems, bad))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_interpolate(v, (*path, i), marks, env, problems, bad) for i, v in enumerate(value)]
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
        bad.add(path)
        return ""

    return _VAR.sub(replace, value)
