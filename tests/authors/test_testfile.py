"""Test files for `mcp test`: loading (every problem at file:line:col), assertions, reports."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

from mcpcli.testfile import Case, Expect, Outcome, Suite, Target, TestFileError, load_suites
from mcpcli.testfile.expect import Answer, check, contains, texts
from mcpcli.testfile.load import load_suite
from mcpcli.testfile.model import ABSENT
from mcpcli.testfile.report import human, junit_xml, summary
from mcpcli.testfile.snapshots import Snapshots


def write(tmp_path: Path, text: str, name: str = "t.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def problems(tmp_path: Path, text: str, **kw: Any) -> list[str]:
    path = write(tmp_path, text)
    with pytest.raises(TestFileError) as caught:
        load_suite(path, **kw)
    return [p.format(None).removeprefix(path + ":") for p in caught.value.problems]


def test_a_file_loads_into_cases(tmp_path: Path) -> None:
    path = write(tmp_path, """\
target: tools.yaml
tests:
  - name: echo
    call: echo
    args: {message: hi, n: 3}
    expect:
      text: "^Echo"
      jq: '.content | length == 1'
      json: {isError: false}
      error: false
      snapshot: {ignore: [.structuredContent.time]}
  - name: read
    read: file:///x
    expect: {error: -32002}
  - {name: prompt, prompt: p, args: {a: b}, expect: {error: {message: nope}}}
  - {name: plain, call: t, x-note: ignored}
""")
    suite = load_suite(path)
    assert suite.target == Target(spec=os.path.join(str(tmp_path), "tools.yaml"), base=str(tmp_path))
    echo, read, prompt, plain = suite.cases
    assert (echo.action, echo.subject, echo.args, echo.line) == ("call", "echo", {"message": "hi", "n": 3}, 3)
    assert echo.expect.text is not None and echo.expect.text.pattern == "^Echo"
    assert echo.expect.jq is not None and echo.expect.json == {"isError": False}
    assert echo.expect.snapshot and echo.expect.ignore is not None
    assert (read.action, read.expect.error) == ("read", -32002)
    assert (prompt.expect.error, prompt.expect.error_rpc) == (True, True)
    assert plain.expect == Expect()
    assert suite.snapshot_path == str(tmp_path / "__snapshots__" / "t.yaml.json")


@pytest.mark.parametrize(("spec", "expected"), [
    ("everything", "everything"),
    ("https://x.example/mcp", "https://x.example/mcp"),
    ("@ev", "@ev"),
    ("server.yml", "DIR/server.yml"),
    ("sub/server.yaml", "DIR/sub/server.yaml"),
    ("/abs/server.yaml", "/abs/server.yaml"),
])
def test_a_file_target_is_relative_to_the_file(tmp_path: Path, spec: str, expected: str) -> None:
    suite = load_suite(write(tmp_path, f"target: '{spec}'\ntests: [{{name: a, call: b}}]\n"))
    assert suite.target is not None
    assert suite.target.spec == expected.replace("DIR", str(tmp_path))


def test_a_command_target_runs_in_the_files_directory(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, "target: [python, server.py]\ntests: [{name: a, call: b}]\n"))
    assert suite.target == Target(command=("python", "server.py"), base=str(tmp_path))


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    found = problems(tmp_path, """\
targett: ev
tests:
  - name: a
    call: echo
    read: x://y
  - name: a
    call: echo
    expect: {text: "(", jq: ".a |", error: "x", snapshot: {ignore: [length]}}
  - name: p
    prompt: p
    args: {n: 3}
    expect: {jsn: 1}
  - call: x
  - name: r
    read: x://
    args: {a: 1}
  - 7
""")
    assert found == [
        "1:1: unknown key 'targett' in a test file (did you mean 'target'?)",
        "1:1: no target: name the server with `target:` (a server name, URL, tools.yaml, @session or a "
        "command list) or give --target (e.g. target: [python, server.py])",
        "5:5: give one of call:, read: or prompt:, not call and read",
        "6:11: duplicate test name 'a' (first at line 3)",
        "8:20: invalid regular expression: missing ), unterminated subpattern at position 0",
        "8:29: invalid jq expression: syntax error, unexpected end of file at <top-level>, line 1, column 4",
        "8:44: `error:` is false (must succeed), true (must fail), a JSON-RPC error code, or {code, message}",
        "8:69: not a jq path: Invalid path expression with result 0 (e.g. .structuredContent.time)",
        "11:15: prompt argument 'n' must be text (prompt arguments are strings: quote the value)",
        "12:14: unknown key 'jsn' in expect (did you mean 'json'?)",
        "13:5: a test needs a `name:` (text)",
        "16:5: `read:` takes no `args:`",
        "17:5: a test is a mapping with `name:` and one of `call:`, `read:` or `prompt:`",
    ]


@pytest.mark.parametrize(("text", "message"), [
    ("", "1:1: the file is empty (start with `version: 1`)"),
    ("- a\n", "1:1: a test file is a mapping with `target:` and `tests:`"),
    ("target: x\n", "1:1: no tests: add a `tests:` list"),
    ("target: x\ntests: []\n", "2:8: `tests:` must be a list of tests (each with a name and a call:, read: or prompt:)"),
    ("target: [1]\ntests: [{name: a, call: b}]\n", "1:9: `target:` is a server name, URL, tools.yaml path or "
     "@session (text), or a server command as a list of strings (e.g. target: everything, or target: "
     "[python, server.py])"),
    ("target: x\ntests: [{name: a, call: b, args: {flag: yes}}]\n", "2:41: unquoted 'yes' is ambiguous (YAML 1.1 "
     "reads it as true): write true for a boolean or 'yes' in quotes for a string"),
    ("target: x\ntests: [{name: a, call: b}]\ntests: []\n", "3:1: duplicate key 'tests' (first at line 2)"),
])
def test_yaml_and_shape_problems(tmp_path: Path, text: str, message: str) -> None:
    assert problems(tmp_path, text) == [message]


def test_a_target_on_the_command_line_makes_the_files_optional(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, "tests: [{name: a, call: b}]\n"), target_given=True)
    assert suite.target is None


def test_problems_of_every_file_come_together(tmp_path: Path) -> None:
    good = write(tmp_path, "target: x\ntests: [{name: a, call: b}]\n", "good.yaml")
    bad = write(tmp_path, "target: x\ntests: [{name: a}]\n", "bad.yaml")
    os.mkfifo(tmp_path / "fifo.yaml")
    with pytest.raises(TestFileError) as caught:
        load_suites([bad, good, str(tmp_path / "missing.yaml"), str(tmp_path), str(tmp_path / "fifo.yaml")])
    assert [p.format("error") for p in caught.value.problems] == [
        f"{bad}:2:9: error: a test needs one of `call: TOOL`, `read: URI` or `prompt: NAME`",
        f"{tmp_path}/missing.yaml: error: cannot read the test file: No such file or directory",
        f"{tmp_path}: error: not a regular file",
        f"{tmp_path}/fifo.yaml: error: not a regular file",
    ]


def test_the_readme_example_loads(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    example = readme.split("```yaml\n# tests/mcp.yaml\n", 1)[1].split("```", 1)[0]
    suite = load_suite(write(tmp_path, example))
    assert [case.action for case in suite.cases] == ["call", "call", "read", "prompt"]
    assert suite.target == Target(command=("python", "server.py"), base=str(tmp_path))


# -- assertions ----------------------------------------------------------------------------------


def expect(tmp_path: Path, yaml_expect: str) -> Expect:
    suite = load_suite(write(tmp_path, f"target: x\ntests: [{{name: a, call: b, expect: {yaml_expect}}}]\n"))
    return suite.cases[0].expect


RESULT = {"content": [{"type": "text", "text": "Echo: hi"}, {"type": "text", "text": "second"}],
          "structuredContent": {"n": 1, "tags": ["a", "b"]}}


@pytest.mark.parametrize(("yaml_expect", "answer", "failures"), [
    ("{}", Answer("call", result=RESULT), []),
    ("{text: 'second$'}", Answer("call", result=RESULT), []),
    ("{text: 'Echo: hi\\nsecond'}", Answer("call", result=RESULT), []),
    ("{text: nope}", Answer("call", result=RESULT), ['text "nope" not found in "Echo: hi\\nsecond"']),
    ("{text: x}", Answer("call", result={"content": []}), ['text "x": the answer has no text']),
    ("{jq: '.structuredContent.n == 1'}", Answer("call", result=RESULT), []),
    ("{jq: '.content[].type == \"text\"'}", Answer("call", result=RESULT), []),
    ("{jq: '.structuredContent.n'}", Answer("call", result=RESULT), ['jq ".structuredContent.n" gave 1']),
    ("{jq: 'empty'}", Answer("call", result=RESULT), ['jq "empty" gave no value']),
    ("{jq: '.content | error(\"boom\")'}", Answer("call", result=RESULT),
     ['jq ".content | error(\\"boom\\")": boom']),
    ("{json: {structuredContent: {n: 1.0}}}", Answer("call", result=RESULT), []),
    ("{json: {structuredContent: {n: true}}}", Answer("call", result=RESULT),
     ["json: at .structuredContent.n: expected true, got 1"]),
    ("{json: {structuredContent: {tags: [a]}}}", Answer("call", result=RESULT),
     ["json: at .structuredContent.tags: expected 1 items, got 2"]),
    ("{json: {content: [{}, {text: other}]}}", Answer("call", result=RESULT),
     ['json: at .content[1].text: expected "other", got "second"']),
    # errors
    ("{}", Answer("call", result={"isError": True, "content": [{"type": "text", "text": "bad"}]}),
     ["the tool reported an error (isError): bad"]),
    ("{}", Answer("call", error={"code": -32602, "message": "Unknown tool"}),
     ["the server answered with error -32602: Unknown tool"]),
    ("{error: true, text: bad}", Answer("call", result={"isError": True, "content": [{"type": "text", "text": "bad"}]}),
     []),
    ("{error: true}", Answer("read", error={"code": -32002, "message": "not found"}), []),
    ("{error: true}", Answer("call", result=RESULT),
     ["expected an error, got a result (tool calls fail with isError or a JSON-RPC error)"]),
    ("{error: -32002, text: found}", Answer("read", error={"code": -32002, "message": "not found"}), []),
    ("{error: -32002}", Answer("read", error={"code": -32602, "message": "bad uri"}),
     ["expected error code -32002, got -32602: bad uri"]),
    ("{error: -32602}", Answer("call", result={"isError": True}), ["expected JSON-RPC error -32602, got a result with isError"]),
    ("{error: {message: 'Unknown'}}", Answer("call", error={"code": -32602, "message": "Unknown tool"}), []),
    ("{error: {code: -32602, message: '^x'}}", Answer("call", error={"code": -32602, "message": "Unknown tool"}),
     ['error message "Unknown tool" does not match "^x"']),
    ("{error: {message: 'x'}}", Answer("call", result={"isError": True}), ["expected a JSON-RPC error, got a result with isError"]),
    ("{error: true, json: {code: -32002}, jq: '.message | test(\"found\")'}",
     Answer("read", error={"code": -32002, "message": "not found"}), []),
])
def test_assertions(tmp_path: Path, yaml_expect: str, answer: Answer, failures: list[str]) -> None:
    assert check(expect(tmp_path, yaml_expect), answer) == failures


def test_snapshots_compare_without_volatile_fields_and_ignored_paths(tmp_path: Path) -> None:
    asks = expect(tmp_path, "{snapshot: {ignore: [.structuredContent.time, '.content[0]']}}")
    first = {"content": [{"type": "text", "text": "at 12:00"}, {"type": "text", "text": "ok"}],
             "structuredContent": {"time": "12:00", "n": 1}, "_meta": {"io.modelcontextprotocol/x": 1},
             "resultType": "complete", "ttlMs": 0}
    from mcpcli.testfile.expect import snapshot_value

    stored = snapshot_value(asks, Answer("call", result=first))
    assert stored == {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"n": 1}}
    later = {**first, "structuredContent": {"time": "13:00", "n": 1},
             "content": [{"type": "text", "text": "at 13:00"}, {"type": "text", "text": "ok"}]}
    assert check(asks, Answer("call", result=later), stored) == []
    changed = {**later, "structuredContent": {"time": "13:00", "n": 2}}
    assert check(asks, Answer("call", result=changed), stored) == [
        "differs from its snapshot: at .structuredContent.n: 2, was 1 (run with --update to accept the new answer)"]
    assert check(asks, Answer("call", result=later), ABSENT) == [
        "no stored snapshot for this test (run with --update to write it)"]


def test_texts_and_contains() -> None:
    prompt = {"messages": [{"role": "user", "content": {"type": "text", "text": "one"}},
                           {"role": "user", "content": {"type": "resource", "resource": {"uri": "x", "text": "two"}}}]}
    assert texts(prompt) == "one\ntwo"
    assert contains({"a": [1, {"b": 2, "c": 3}]}, {"a": [1, {"b": 2}]}, "") is None
    assert contains({"a": 1}, {"a": 1, "b": None}, "") == 'at .: no key "b"'
    assert contains({"a b": {"c": 1}}, {"a b": {"c": 2}}, "") == 'at ["a b"].c: expected 2, got 1'
    assert contains([1], {"a": 1}, "") == "at .: expected an object, got [1]"


# -- reports and stored snapshots -----------------------------------------------------------------


def outcomes() -> list[Outcome]:
    one = Suite("a.yaml", Target(spec="x"), (Case("ok", "call", "t"), Case("bad \x1b[31m", "call", "t")))
    two = Suite("b.yaml", Target(spec="x"), (Case("gone", "read", "u"),))
    return [
        Outcome(one, one.cases[0], "x", "passed", [], 0.012),
        Outcome(one, one.cases[1], "x", "failed", ["text \"a\" not found in \"\x07b\"", "jq gave false"], 0.02),
        Outcome(two, two.cases[0], "x", "error", ["x: the server exited"], 0.0),
    ]


def test_junit_xml_is_one_suite_per_file_and_well_formed() -> None:
    root = ET.fromstring(junit_xml(outcomes(), 1.5))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    suites = root.findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures"), s.get("errors")) for s in suites] == [
        ("a.yaml", "2", "1", "0"), ("b.yaml", "1", "0", "1")]
    ok, bad = suites[0].findall("testcase")
    assert (ok.get("classname"), ok.get("name"), ok.get("time"), list(ok)) == ("a.yaml", "ok", "0.012", [])
    assert bad.get("name") == "bad \\x1b[31m"
    failure = bad.find("failure")
    assert failure is not None
    assert failure.get("message") == 'text "a" not found in "\\x07b"'
    assert failure.text == 'text "a" not found in "\\x07b"\njq gave false'
    error = suites[1].find("testcase/error")
    assert error is not None and error.get("message") == "x: the server exited"


def test_json_and_human_reports() -> None:
    report = summary(outcomes(), 1.5)
    assert (report["passed"], report["failed"], report["errors"]) == (1, 1, 1)
    assert report["tests"][1] == {"file": "a.yaml", "name": "bad \x1b[31m", "target": "x", "status": "failed",
                                  "duration": 0.02, "failures": ["text \"a\" not found in \"\x07b\"", "jq gave false"]}
    text = human(outcomes(), 1.5)
    assert text.splitlines() == [
        "PASS  a.yaml: ok (12 ms)",
        "FAIL  a.yaml: bad \\x1b[31m (20 ms)",
        '      text "a" not found in "\\x07b"',
        "      jq gave false",
        "ERROR b.yaml: gone (0 ms)",
        "      x: the server exited",
        "1 passed, 1 failed, 1 error in 1.50s",
    ]


def test_stored_snapshots_update_only_what_ran(tmp_path: Path) -> None:
    path = write(tmp_path, "target: x\ntests:\n  - {name: a, call: t, expect: {snapshot: true}}\n"
                           "  - {name: b, call: t, expect: {snapshot: true}}\n  - {name: c, call: t}\n")
    snaps = Snapshots(load_suite(path))
    snaps.load()
    assert snaps.get("a") is ABSENT
    assert snaps.updated() is None  # nothing taken, nothing stored: no file
    snaps.take("a", {"v": 1})
    text = snaps.updated()
    assert text == '{\n  "mcpTestSnapshots": 1,\n  "tests": {\n    "a": {\n      "v": 1\n    }\n  }\n}\n'
    os.makedirs(os.path.dirname(snaps.path))
    Path(snaps.path).write_text('{"mcpTestSnapshots": 1, "tests": {"a": {"v": 1}, "b": 2, "old": 3}}')
    again = Snapshots(load_suite(path))
    again.load()
    assert (again.get("a"), again.get("b")) == ({"v": 1}, 2)
    again.take("a", {"v": 1})  # b could not run: kept; old is no longer a test: dropped
    assert again.updated() == ('{\n  "mcpTestSnapshots": 1,\n  "tests": {\n    "a": {\n      "v": 1\n    },\n'
                               '    "b": 2\n  }\n}\n')


@pytest.mark.parametrize("content", ["{", "[]", '{"tests": {}}', '{"mcpTestSnapshots": 1, "tests": []}', "FIFO"])
def test_a_broken_snapshot_file_is_a_problem(tmp_path: Path, content: str) -> None:
    path = write(tmp_path, "target: x\ntests: [{name: a, call: t, expect: {snapshot: true}}]\n")
    (tmp_path / "__snapshots__").mkdir()
    if content == "FIFO":
        os.mkfifo(tmp_path / "__snapshots__" / "t.yaml.json")
    else:
        (tmp_path / "__snapshots__" / "t.yaml.json").write_text(content)
    with pytest.raises(TestFileError) as caught:
        Snapshots(load_suite(path)).load()
    assert caught.value.problems[0].file == str(tmp_path / "__snapshots__" / "t.yaml.json")


# -- the runner, with a stand-in client ------------------------------------------------------------


class Recorder:
    """A client whose `first` call answers only once `second` was asked: tests must overlap."""

    def __init__(self) -> None:
        import anyio

        self.calls: list[str] = []
        self.second = anyio.Event()

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        self.calls.append(name)
        if name == "first":
            with anyio_fail_after(10):
                await self.second.wait()
        if name == "second":
            self.second.set()
        return {"content": [{"type": "text", "text": name}]}

    async def read_resource(self, uri: str) -> dict[str, Any]:
        from mcpcli.errors import RPCError

        raise RPCError(-32002, f"Resource not found: {uri}")

    async def get_prompt(self, name: str, arguments: Any = None) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": {"type": "text", "text": str(arguments)}}]}


def anyio_fail_after(seconds: float) -> Any:
    import anyio

    return anyio.fail_after(seconds)


def run(suites: list[Suite], client: Any, **kw: Any) -> list[Outcome]:
    import contextlib

    import anyio

    from mcpcli.testfile import run_suites

    @contextlib.asynccontextmanager
    async def open_client(target: Target) -> Any:
        if target.spec == "down":
            from mcpcli.errors import TransportError

            raise TransportError("connection refused")
        yield client

    async def go() -> list[Outcome]:
        return await run_suites(suites, open_client, **kw)

    return anyio.run(go)


def test_the_tests_of_one_target_run_at_once_and_targets_apart(tmp_path: Path) -> None:
    up = load_suite(write(tmp_path, "target: up\ntests:\n  - {name: a, call: first, expect: {text: first}}\n"
                                    "  - {name: b, call: second}\n  - {name: c, read: x://, expect: {error: -32002}}\n"
                                    "  - {name: d, prompt: p, args: {k: v}, expect: {text: \"'k': 'v'\"}}\n"
                                    "  - {name: e, call: second, expect: {snapshot: true}}\n", "up.yaml"))
    down = load_suite(write(tmp_path, "target: down\ntests: [{name: f, call: first}]\n", "down.yaml"))
    client = Recorder()
    outcomes = run([up, down], client)
    assert [(o.case.name, o.status, o.failures) for o in outcomes] == [
        ("a", "passed", []), ("b", "passed", []), ("c", "passed", []), ("d", "passed", []),
        ("e", "failed", ["no stored snapshot for this test (run with --update to write it)"]),
        ("f", "error", ["down: connection refused"]),
    ]
    assert client.calls[:2] == ["first", "second"]


def test_jobs_1_runs_them_one_at_a_time_in_file_order(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, "target: up\ntests:\n  - {name: b, call: second}\n"
                                       "  - {name: x, call: other}\n  - {name: a, call: first}\n"))
    client = Recorder()
    outcomes = run([suite], client, jobs=1)
    assert client.calls == ["second", "other", "first"]  # `first` waits for a `second` already made
    assert {o.status for o in outcomes} == {"passed"}
