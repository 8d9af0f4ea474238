"""`mcp test` on the fixture server (v1.yaml) and its broken next release (v2.yaml).

smoke.yaml holds saved calls that pass against v1 and fail against v2.
"""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in

HERE = Path(__file__).resolve().parent
V1, V2, SMOKE = str(HERE / "v1.yaml"), str(HERE / "v2.yaml"), str(HERE / "smoke.yaml")


def test_the_saved_calls_pass_against_the_release_they_were_written_for() -> None:
    r = mcp_in("test", SMOKE)
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines[:-1]] == [
        f"PASS  {SMOKE}: {name}" for name in ("greet", "convert", "legacy", "broken tool", "unknown tool",
                                              "readme", "item", "review", "convert snapshot")]
    assert lines[-1].startswith("9 passed, 0 failed, 0 errors in ")


def test_and_fail_against_the_broken_one(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    r = mcp_in("test", SMOKE, "--target", V2, "--json", "--junit", str(junit))
    assert r.code == 1, r
    report = json.loads(r.stdout)
    assert (report["passed"], report["failed"], report["errors"]) == (3, 6, 0)
    by_name = {t["name"]: t for t in report["tests"]}
    assert by_name["greet"]["status"] == "failed"
    assert by_name["greet"]["failures"][0] == "the tool reported an error (isError): Invalid arguments:\n- title: is required"
    assert by_name["legacy"]["failures"][0] == "the server answered with error -32602: Unknown tool: legacy"
    assert by_name["convert snapshot"]["failures"] == [
        'differs from its snapshot: at .content[0].text: "{\\"value\\": 1, \\"unit\\": \\"m\\"}", was '
        '"{\\"value\\": 1, \\"unit\\": \\"m\\", \\"note\\": \\"converted\\"}" (run with --update to accept the new answer)']
    assert [t["target"] for t in report["tests"]] == [V2] * 9
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors")) == (SMOKE, "9", "6", "0")
    failed = [case.get("name") for case in suite.findall("testcase") if case.find("failure") is not None]
    assert failed == ["greet", "convert", "legacy", "item", "review", "convert snapshot"]


def test_update_stores_the_answers_then_they_are_compared(tmp_path: Path) -> None:
    shutil.copy(V1, tmp_path / "v1.yaml")
    shutil.copy(V2, tmp_path / "v2.yaml")
    tests = tmp_path / "mcp.yaml"
    tests.write_text("target: v1.yaml\ntests:\n"
                     "  - {name: convert, call: convert, args: {amount: 1, unit: m}, expect: {snapshot: true}}\n"
                     "  - {name: greet, call: greet, args: {name: Ada},"
                     " expect: {snapshot: {ignore: ['.content[0].text']}}}\n")
    first = mcp_in("test", str(tests))
    assert first.code == 1
    assert first.stdout.count("no stored snapshot for this test (run with --update to write it)") == 2
    r = mcp_in("test", str(tests), "--update")
    assert r.code == 0, r
    stored = tmp_path / "__snapshots__" / "mcp.yaml.json"
    assert r.stderr == f"mcp: wrote {stored}\n"
    data = json.loads(stored.read_text())
    assert data["tests"]["greet"] == {"content": [{"type": "text"}]}
    assert data["tests"]["convert"]["structuredContent"] == {"note": "converted", "unit": "m", "value": 1}
    again = mcp_in("test", str(tests))
    assert again.code == 0, again
    assert mcp_in("test", str(tests), "--update").stderr == ""  # nothing changed, nothing written
    broken = mcp_in("test", str(tests), "--target", str(tmp_path / "v2.yaml"))
    assert broken.code == 1
    assert "FAIL  " + str(tests) + ": convert" in broken.stdout
    assert "differs from its snapshot: at .content[0].text" in broken.stdout


def test_invalid_files_stop_everything_with_every_problem(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    good = tmp_path / "good.yaml"
    good.write_text("tests: [{name: a, call: echo}]\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("tests:\n  - {name: a, call: echo, expect: {txt: x}}\n  - {name: b}\n")
    r = mcp_in("test", str(good), str(bad), str(tmp_path / "none.yaml"), "--", *fake_server("--record", str(record)))
    assert r.code == 2
    assert r.stdout == ""
    assert r.stderr.splitlines() == [
        f"{bad}:2:36: error: unknown key 'txt' in expect (did you mean 'text'?)",
        f"{bad}:3:5: error: a test needs one of `call: TOOL`, `read: URI` or `prompt: NAME`",
        f"{tmp_path}/none.yaml: error: cannot read the test file: No such file or directory",
    ]
    assert not record.exists()  # nothing was started
    r = mcp_in("test", str(bad), "--json", "--", *fake_server())
    assert r.code == 2
    error = json.loads(r.stderr)["error"]
    assert (error["type"], error["exitCode"], len(error["problems"])) == ("config", 2, 2)


def test_target_problems_are_usage_errors_before_anything_runs(tmp_path: Path) -> None:
    tests = tmp_path / "t.yaml"
    tests.write_text("target: nosuchserver\ntests: [{name: a, call: echo}]\n")
    r = mcp_in("test", str(tests))
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr.splitlines()[0] == "mcp: error: unknown server 'nosuchserver'"
    r = mcp_in("test", str(tests), "--target", "x", "--", "python", "s.py")
    assert r.code == 2
    assert r.stderr.splitlines()[0] == "mcp: error: give --target or a server command after --, not both"
    r = mcp_in("test", SMOKE, "--elicit-json", "[1]")  # a bad flag: no test runs, none is an error
    assert (r.code, r.stdout, r.stderr) == (2, "", "mcp: error: --elicit-json must be a JSON object\n")


def test_a_tools_yaml_target_is_relative_to_the_test_file(tmp_path: Path) -> None:
    shutil.copy(V1, tmp_path / "server.yaml")
    (tmp_path / "sub").mkdir()
    tests = tmp_path / "sub" / "t.yaml"
    tests.write_text("target: ../server.yaml\ntests: [{name: greet, call: greet, args: {name: Bo}, "
                     "expect: {text: 'Hello, Bo!'}}]\n")
    r = mcp_in("test", "sub/t.yaml", cwd=tmp_path)
    assert r.code == 0, r
    assert r.stdout.startswith("PASS  sub/t.yaml: greet (")


@pytest.mark.slow
def test_files_of_one_target_share_one_connection_and_jobs_1_keeps_their_order(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    target = json.dumps(fake_server("--record", str(record)))
    for name, messages in (("a.yaml", ["one", "two"]), ("b.yaml", ["three"])):
        cases = "".join(f"  - {{name: {m}, call: echo, args: {{message: {m}}}, expect: {{text: '^{m}$'}}}}\n"
                        for m in messages)
        (tmp_path / name).write_text(f"target: {target}\ntests:\n{cases}")
    r = mcp_in("test", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), "--jobs", "1", "-q")
    assert r.code == 0, r
    received = [json.loads(line) for line in record.read_text().splitlines()]
    assert [m["method"] for m in received if m.get("method") == "initialize"] == ["initialize"]
    calls = [m["params"]["arguments"]["message"] for m in received if m.get("method") == "tools/call"]
    assert calls == ["one", "two", "three"]


@pytest.mark.slow
def test_a_command_target_runs_in_the_test_files_directory(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(f"target: {json.dumps(fake_server('--record', 'received.jsonl'))}\n"
                                     "tests: [{name: a, call: echo, args: {message: hi}}]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = mcp_in("test", str(tmp_path / "t.yaml"), "-q", cwd=elsewhere)
    assert r.code == 0, r
    assert (tmp_path / "received.jsonl").exists() and not (elsewhere / "received.jsonl").exists()


@pytest.mark.slow
def test_a_target_that_cannot_be_reached_errors_its_tests_only(tmp_path: Path) -> None:
    dead = json.dumps(fake_server("--exit-before-init", "3"))
    (tmp_path / "dead.yaml").write_text(f"target: {dead}\ntests: [{{name: a, call: echo}}, {{name: b, call: echo}}]\n")
    shutil.copy(V1, tmp_path / "v1.yaml")
    (tmp_path / "ok.yaml").write_text("target: v1.yaml\ntests: [{name: c, call: legacy}]\n")
    r = mcp_in("test", str(tmp_path / "dead.yaml"), str(tmp_path / "ok.yaml"), "--json", "-q")
    assert r.code == 1, r
    report = json.loads(r.stdout)
    assert [(t["name"], t["status"]) for t in report["tests"]] == [("a", "error"), ("b", "error"), ("c", "passed")]
    assert report["tests"][0]["failures"][0].startswith(" ".join(fake_server("--exit-before-init", "3")) + ": ")
    assert (report["passed"], report["failed"], report["errors"]) == (1, 0, 2)


def test_jsonl_prints_one_test_per_line() -> None:
    r = mcp_in("test", SMOKE, "--jsonl")
    assert r.code == 0
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [line["name"] for line in lines][:2] == ["greet", "convert"]
    assert {line["status"] for line in lines} == {"passed"}


def test_the_fixture_snapshot_is_committed_and_current() -> None:
    stored = HERE / "__snapshots__" / "smoke.yaml.json"
    assert json.loads(stored.read_text())["tests"].keys() == {"convert snapshot"}
    assert os.access(stored, os.R_OK)
