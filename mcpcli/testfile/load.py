"""Load and check test files: every problem of every file at once, each at `file:line:col`.

The YAML is read by the tools.yaml reader (`toolsfile.yamlstrict`: duplicate keys, YAML
1.1 traps, tags and alias bombs are errors); then the shape is checked here and
the regular expressions and jq programs are compiled, so that nothing is sent to
any server while a file has a problem.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from typing import Any

from mcpcli.errors import ConfigError
from mcpcli.testfile.model import ABSENT, Case, Expect, Suite, Target
from mcpcli.toolsfile.yamlstrict import Marks, Problem, YamlProblems
from mcpcli.toolsfile.yamlstrict import load as load_yaml

__all__ = ["TestFileError", "load_suite", "load_suites", "read_file"]

#: A test file larger than this is refused (it would be no test file).
MAX_BYTES = 16 * 1024 * 1024

TOP_KEYS = ("target", "tests")
CASE_KEYS = ("name", "call", "read", "prompt", "args", "expect")
ACTIONS = ("call", "read", "prompt")
EXPECT_KEYS = ("text", "jq", "json", "error", "snapshot")
ERROR_KEYS = ("code", "message")
SNAPSHOT_KEYS = ("ignore",)


class TestFileError(ConfigError):
    """One or more test files are invalid; `problems` lists every error with its position."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{first.format(None)}{more}")
        self.problems = problems


def load_suites(paths: list[str], *, target_given: bool = False) -> list[Suite]:
    """Every file loaded, or `TestFileError` with the problems of all of them."""
    suites: list[Suite] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            suites.append(load_suite(path, target_given=target_given))
        except TestFileError as exc:
            problems.extend(exc.problems)
    if problems:
        raise TestFileError(problems)
    return suites


def load_suite(path: str, *, target_given: bool = False) -> Suite:
    """One test file; `target_given`: a target comes from the command line, so the file
    need not name one."""
    data = read_file(path)
    assert data is not None
    try:
        raw, marks = load_yaml(data, path)
    except YamlProblems as exc:
        raise TestFileError(exc.problems) from None
    checker = _Checker(marks)
    suite = checker.suite(raw, path, target_given)
    if checker.problems:
        raise TestFileError(sorted(checker.problems, key=lambda p: (p.line, p.col)))
    assert suite is not None
    return suite


def read_file(path: str, what: str = "the test file") -> bytes | None:
    """The bytes of `path`, a regular file of at most MAX_BYTES (a FIFO or a device would never
    end); None when it does not exist and `what` is not the test file itself; TestFileError
    for anything else."""

    def problem(message: str) -> TestFileError:
        return TestFileError([Problem(path, 0, 0, message)])

    try:
        info = os.stat(path)
    except FileNotFoundError:
        if what != "the test file":
            return None
        raise problem(f"cannot read {what}: No such file or directory") from None
    except OSError as exc:
        raise problem(f"cannot read {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise problem("not a regular file")
    if info.st_size > MAX_BYTES:
        raise problem(f"the file is larger than {MAX_BYTES // (1024 * 1024)} MiB")
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise problem(f"cannot read {what}: {exc.strerror or exc}") from None


class _Checker:
    def __init__(self, marks: Marks) -> None:
        self.marks = marks
        self.problems: list[Problem] = []

    def fail(self, path: tuple[Any, ...], message: str, hint: str | None = None, *, key: bool = False) -> None:
        self.problems.append(self.marks.problem(path, message, hint, key=key))

    def keys(self, value: dict[str, Any], path: tuple[Any, ...], allowed: tuple[str, ...], what: str) -> None:
        for name in value:
            if name in allowed or name.startswith("x-"):
                continue
            close = difflib.get_close_matches(name, allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(allowed)
            self.fail((*path, name), f"unknown key {name!r} in {what}", hint, key=True)

    # -- the file ----------------------------------------------------------------------------

    def suite(self, raw: Any, path: str, target_given: bool) -> Suite | None:
        if not isinstance(raw, dict):
            self.fail((), "a test file is a mapping with `target:` and `tests:`")
            return None
        self.keys(raw, (), TOP_KEYS, "a test file")
        base = os.path.dirname(path)
        target = self.target(raw.get("target", ABSENT), base)
        if target is None and "target" not in raw and not target_given:
            self.fail((), "no target: name the server with `target:` (a server name, URL, tools.yaml, "
                          "@session or a command list) or give --target",
                      "e.g. target: [python, server.py]")
        tests = raw.get("tests", ABSENT)
        cases: list[Case] = []
        if tests is ABSENT:
            self.fail((), "no tests: add a `tests:` list")
        elif not isinstance(tests, list) or not tests:
            self.fail(("tests",), "`tests:` must be a list of tests (each with a name and a call:, read: or prompt:)")
        else:
            seen: dict[str, int] = {}
            for index, item in enumerate(tests):
                case = self.case(item, ("tests", index))
                name = item.get("name") if isinstance(item, dict) else None
                if isinstance(name, str) and name in seen:
                    self.fail(("tests", index, "name"), f"duplicate test name {name!r} (first at line {seen[name]})")
                    continue
                if isinstance(name, str):
                    seen[name] = self.marks.at(("tests", index))[0]
                if case is not None:
                    cases.append(case)
        return Suite(path=path, target=target, cases=tuple(cases))

    def target(self, value: Any, base: str) -> Target | None:
        where = ("target",)
        if value is ABSENT:
            return None
        if isinstance(value, str) and value.strip():
            return Target(spec=_relative(value, base), base=base)
        if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
            return Target(command=tuple(value), base=base)
        self.fail(where, "`target:` is a server name, URL, tools.yaml path or @session (text), or a "
                         "server command as a list of strings",
                  "e.g. target: everything, or target: [python, server.py]")
        return None

    # -- one test ----------------------------------------------------------------------------

    def case(self, item: Any, path: tuple[Any, ...]) -> Case | None:
        if not isinstance(item, dict):
            self.fail(path, "a test is a mapping with `name:` and one of `call:`, `read:` or `prompt:`")
            return None
        before = len(self.problems)
        self.keys(item, path, CASE_KEYS, "a test")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            self.fail((*path, "name") if "name" in item else path, "a test needs a `name:` (text)")
        actions = [a for a in ACTIONS if a in item]
        if not actions:
            self.fail(path, "a test needs one of `call: TOOL`, `read: URI` or `prompt: NAME`")
        elif len(actions) > 1:
            self.fail((*path, actions[1]), f"give one of call:, read: or prompt:, not {' and '.join(actions)}",
                      key=True)
        action = actions[0] if actions else "call"
        subject = item.get(action)
        if actions and (not isinstance(subject, str) or not subject):
            self.fail((*path, action), f"`{action}:` names the {_noun(action)} (text)")
        args = self.args(item.get("args", ABSENT), (*path, "args"), action)
        expect = self.expect(item.get("expect", ABSENT), (*path, "expect"))
        if len(self.problems) > before or not isinstance(name, str) or not isinstance(subject, str):
            return None
        line = self.marks.at(path)[0]
        return Case(name=name, action=action, subject=subject, args=args, expect=expect, line=line)

    def args(self, value: Any, path: tuple[Any, ...], action: str) -> dict[str, Any]:
        if value is ABSENT:
            return {}
        if action == "read":
            self.fail(path, "`read:` takes no `args:`", key=True)
            return {}
        if not isinstance(value, dict):
            self.fail(path, "`args:` is a mapping of argument names to values")
            return {}
        if action == "prompt":
            for key, item in value.items():
                if not isinstance(item, str):
                    self.fail((*path, key), f"prompt argument {key!r} must be text",
                              "prompt arguments are strings: quote the value")
        return value

    def expect(self, value: Any, path: tuple[Any, ...]) -> Expect:
        if value is ABSENT:
            return Expect()
        if not isinstance(value, dict):
            self.fail(path, "`expect:` is a mapping of assertions (text, jq, json, error, snapshot)")
            return Expect()
        self.keys(value, path, EXPECT_KEYS, "expect")
        fields: dict[str, Any] = {}
        if "text" in value:
            fields["text"] = self.regex(value["text"], (*path, "text"), "`text:`")
        if "jq" in value:
            fields["jq"] = self.jq(value["jq"], (*path, "jq"))
        if "json" in value:
            fields["json"] = value["json"]
        if "error" in value:
            fields.update(self.error(value["error"], (*path, "error")))
        if "snapshot" in value:
            fields.update(self.snapshot(value["snapshot"], (*path, "snapshot")))
        return Expect(**{k: v for k, v in fields.items() if v is not None})

    def error(self, value: Any, path: tuple[Any, ...]) -> dict[str, Any]:
        if isinstance(value, bool) or _is_int(value):
            return {"error": value}
        if isinstance(value, dict):
            self.keys(value, path, ERROR_KEYS, "error")
            code = value.get("code", True)
            if not (code is True or _is_int(code)):
                self.fail((*path, "code"), "`code:` is a JSON-RPC error code (an integer, e.g. -32602)")
                code = True
            message = self.regex(value["message"], (*path, "message"), "`message:`") if "message" in value else None
            return {"error": code, "error_message": message, "error_rpc": True}
        self.fail(path, "`error:` is false (must succeed), true (must fail), a JSON-RPC error code, "
                        "or {code, message}")
        return {}

    def snapshot(self, value: Any, path: tuple[Any, ...]) -> dict[str, Any]:
        if isinstance(value, bool):
            return {"snapshot": value}
        if isinstance(value, dict):
            self.keys(value, path, SNAPSHOT_KEYS, "snapshot")
            ignore = value.get("ignore", [])
            if not isinstance(ignore, list) or not all(isinstance(p, str) and p for p in ignore):
                self.fail((*path, "ignore"), "`ignore:` is a list of jq paths (e.g. .structuredContent.time)")
                return {"snapshot": True}
            return {"snapshot": True, "ignore": self.ignore(ignore, (*path, "ignore")) if ignore else None}
        self.fail(path, "`snapshot:` is true, or {ignore: [jq paths]}")
        return {}

    # -- compiled parts ----------------------------------------------------------------------

    def regex(self, value: Any, path: tuple[Any, ...], what: str) -> re.Pattern[str] | None:
        if not isinstance(value, str):
            self.fail(path, f"{what} is a regular expression (text)", "quote it")
            return None
        try:
            return re.compile(value)
        except re.error as exc:
            self.fail(path, f"invalid regular expression: {exc}")
            return None

    def jq(self, value: Any, path: tuple[Any, ...]) -> tuple[str, Any] | None:
        import jq

        from mcpcli.jqfilter import error_message as jq_message

        if not isinstance(value, str) or not value.strip():
            self.fail(path, "`jq:` is a jq expression that must give true", "e.g. jq: '.content | length == 1'")
            return None
        try:
            return value, jq.compile(value)
        except ValueError as exc:
            self.fail(path, f"invalid jq expression: {jq_message(exc)}")
            return None

    def ignore(self, paths: list[str], where: tuple[Any, ...]) -> tuple[tuple[str, ...], Any] | None:
        import jq

        from mcpcli.jqfilter import error_message as jq_message

        ok = True
        for index, source in enumerate(paths):
            try:
                jq.compile(f"del({source})").input_value(None).all()
            except ValueError as exc:
                self.fail((*where, index), f"not a jq path: {jq_message(exc)}", "e.g. .structuredContent.time")
                ok = False
        if not ok:
            return None
        return tuple(paths), jq.compile("del(" + ", ".join(f"({p})" for p in paths) + ")")


def _relative(spec: str, base: str) -> str:
    """A TARGET in a test file: a file path (a tools.yaml) is relative to the file's
    directory; names, URLs and @sessions are left as they are."""
    from mcpcli.targets import YAML_SUFFIXES, is_session, is_url

    if is_url(spec) or is_session(spec) or os.path.isabs(spec):
        return spec
    if spec.endswith(YAML_SUFFIXES) or os.sep in spec:
        return os.path.join(base, spec) if base else spec
    return spec


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _noun(action: str) -> str:
    return {"call": "tool", "read": "resource URI", "prompt": "prompt"}[action]
