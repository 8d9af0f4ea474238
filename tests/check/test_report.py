"""The CI side of `mcp check`: JUnit XML, GitHub annotations, and the command's output, exit
codes and files (in process, on tools.yaml servers and our broken server)."""

from __future__ import annotations

import json
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in

from mcpcli.check.findings import Report
from mcpcli.check.report import github_annotations, junit_xml
from mcpcli.files import replace_file

SERVER = Path(__file__).resolve().parent / "broken_server.py"


def sample() -> Report:
    report = Report()
    report.server = {"name": "srv"}
    report.check("legacy:ping", "ping (legacy 2025-11-25)")
    report.add("legacy:tools", "error", "pagination", "cursor 'a' came back", title="tools/list")
    report.add("legacy:tools", "warning", "result-shape", "no ttlMs", title="tools/list")
    report.add("lint:tools", "warning", "tool-name", "bad\x1b[31m name\nsecond line", "to\x00ol:,%")
    report.add("providers", "info", "provider-strict", "strict", "t", provider="openai")
    report.skip("legacy:completion", "completion/complete", "no prompt argument to complete")
    return report


def test_junit_has_one_testcase_per_check() -> None:
    root = ET.fromstring(junit_xml(sample()))
    suite = root.find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases) == ["ping (legacy 2025-11-25)", "tools/list", "lint:tools", "providers",
                           "completion/complete"]
    assert suite.get("tests") == "5" and suite.get("failures") == "1" and suite.get("skipped") == "1"
    failure = cases["tools/list"].find("failure")
    assert failure is not None and failure.get("type") == "pagination"
    assert "no ttlMs" in (cases["tools/list"].findtext("system-out") or "")
    assert cases["lint:tools"].find("failure") is None
    assert cases["completion/complete"].find("skipped") is not None
    assert cases["ping (legacy 2025-11-25)"].get("classname") == "mcp-check.protocol"
    # server-controlled text never puts control characters into the XML
    assert "\\x1b" in (cases["lint:tools"].findtext("system-out") or "")


def test_junit_under_strict_fails_warnings() -> None:
    root = ET.fromstring(junit_xml(sample(), strict=True))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("failures") == "2"
    case = next(c for c in suite.iter("testcase") if c.get("name") == "lint:tools")
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "tool-name"


def test_github_annotations_are_one_escaped_line_each() -> None:
    lines = github_annotations(sample())
    assert lines[0] == "::error title=mcp check%3A pagination::cursor 'a' came back"
    assert lines[1] == "::warning title=mcp check%3A result-shape::no ttlMs"
    assert lines[2].startswith("::warning title=mcp check%3A tool-name::to\\x00ol:,%25: bad\\x1b[31m name second")
    assert len(lines) == 3  # infos are not annotated
    assert all("\n" not in line and "\r" not in line for line in lines)


def test_write_junit_replaces_a_symlink_instead_of_following_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "report.xml"
    link.symlink_to(victim)
    replace_file(str(link), b"<testsuites/>\n")
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text() == "<testsuites/>\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".mcp-check-")] == []


# -- the command ---------------------------------------------------------------------------

QUIET_TOOLS = """\
    version: 1
    tools:
      - name: hello
        description: Say hello.
        params: {}
        run: {argv: [echo, hello]}
"""


@pytest.fixture
def tools_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "tools.yaml"
    path.write_text(textwrap.dedent(QUIET_TOOLS), encoding="utf-8")
    return path


def test_a_tools_yaml_passes_and_stdout_is_the_json_report(tools_yaml: Path) -> None:
    r = mcp_in("check", str(tools_yaml), "--junit", str(tools_yaml.parent / "junit.xml"))
    assert r.code == 0, r
    data = json.loads(r.stdout)  # not a terminal: JSON
    assert data["ok"] is True and data["summary"]["errors"] == 0
    assert data["server"]["checked"] == ["modern 2026-07-28", "legacy 2025-11-25"]
    suite = ET.parse(tools_yaml.parent / "junit.xml").getroot().find("testsuite")
    assert suite is not None and int(suite.get("tests") or 0) == len(data["checks"])


def test_jsonl_prints_one_finding_per_line(tools_yaml: Path) -> None:
    tools_yaml.write_text(tools_yaml.read_text().replace("params: {}", "params: {who: {type: string, required: false}}"),
                          encoding="utf-8")
    r = mcp_in("check", str(tools_yaml), "--jsonl")
    assert r.code == 0, r
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(f["code"], f["subject"], f["provider"]) for f in lines] == [("provider-strict", "hello", "openai")]


def test_usage_errors_exit_2_before_anything_runs(tools_yaml: Path, tmp_path: Path) -> None:
    r = mcp_in("check", str(tools_yaml), "--junit", str(tmp_path / "no" / "such" / "dir.xml"))
    assert r.code == 2 and "no such directory" in r.stderr, r
    r = mcp_in("check", "no-such-server")
    assert r.code == 2, r


@pytest.mark.slow
def test_a_server_that_cannot_be_reached_is_exit_4(tmp_path: Path) -> None:
    r = mcp_in("check", "--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert r.code == 4, r
    # an initialize answered with an error is no connection either (not exit 5)
    r = mcp_in("check", "--protocol", "2025-11-25", "--", sys.executable, str(SERVER), "modern-noinit")
    assert r.code == 4 and "cannot connect" in r.stderr, r


@pytest.mark.slow
def test_github_actions_annotations_go_to_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    r = mcp_in("check", "--json", "--", sys.executable, str(SERVER), "broken", env={"GITHUB_ACTIONS": "true"})
    assert r.code == 1, r
    data = json.loads(r.stdout)  # stdout stays the report, nothing else
    annotations = [line for line in r.stderr.splitlines() if line.startswith("::")]
    serious = [f for f in data["findings"] if f["severity"] != "info"]
    assert len(annotations) == len(serious)
    assert any(line.startswith("::error title=mcp check%3A pagination::") for line in annotations)
    plain = mcp_in("check", "--json", "--", sys.executable, str(SERVER), "broken", env={"GITHUB_ACTIONS": ""})
    assert not any(line.startswith("::") for line in plain.stderr.splitlines())


@pytest.mark.slow
def test_human_report(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpcli.cli._app import App

    monkeypatch.setattr(App, "stdout_tty", property(lambda self: True))
    r = mcp_in("check", "--", sys.executable, str(SERVER), "broken")
    assert r.code == 1, r
    lines = r.stdout.splitlines()
    assert lines[0] == "broken (legacy 2025-11-25, stdio)"
    assert "FAIL  tools/list (legacy 2025-11-25)" in lines
    assert any(line.split()[:2] == ["error", "pagination"] for line in lines)
    assert not any(line.split()[:1] == ["info"] for line in lines)  # notes only with --verbose
    assert lines[-1].endswith(": FAILED") and "notes (--verbose shows them)" in lines[-1]
    verbose = mcp_in("check", "--verbose", "--", sys.executable, str(SERVER), "broken")
    assert any(line.split()[:2] == ["info", "provider-strict"] for line in verbose.stdout.splitlines())


@pytest.mark.slow
def test_the_era_is_probed_live_even_when_remembered(tmp_path: Path) -> None:
    """`mcp check` judges the handshake: a command line remembered as legacy is probed anyway."""
    record = tmp_path / "sent.jsonl"
    server = fake_server("--record", str(record))
    assert mcp_in("tools", "list", "--json", "--", *server).code == 0  # remembered as legacy now
    record.unlink()
    assert mcp_in("tools", "list", "--json", "--", *server).code == 0
    assert "server/discover" not in record.read_text()  # the memory skips the probe
    record.unlink()
    mcp_in("check", "--json", "--no-calls", "--", *server)
    methods = [json.loads(line).get("method") for line in record.read_text().splitlines()]
    assert methods[0] == "server/discover", methods


@pytest.mark.slow
def test_a_check_asks_nobody_even_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only tool that asks the user (elicitation) is declined, not prompted for."""
    from mcpcli.cli._app import App

    for stream in ("stdin_tty", "stderr_tty"):
        monkeypatch.setattr(App, stream, property(lambda self: True))
    r = mcp_in("check", "--json", "--", sys.executable, str(SERVER), "clean")
    assert r.code == 0, r
    # neither a prompt nor a failed attempt at one (prompting needs the real terminal)
    assert "QUESTION" not in r.stderr and "elicitation" not in r.stderr, r
    assert {c["id"]: c["status"] for c in json.loads(r.stdout)["checks"]}["call:ask"] == "passed"
