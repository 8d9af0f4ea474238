"""The report for CI: JUnit XML and GitHub Actions annotations (the standard library only).

JUnit: one testsuite, one testcase per check, a `<failure>` holding the check's
errors (and, under --strict, its warnings), `<skipped>` for what could not be
checked, the rest in `<system-out>`. GitHub Actions: one workflow command per
error and warning (`::error title=...::message`), written to stderr so stdout
stays the report. The runner reads workflow commands from a step's stderr as from
its stdout (actions/runner, `src/Runner.Worker/Handlers/ScriptHandler.cs` hands
both streams to its command manager).
"""

from __future__ import annotations

from typing import Any

from mcpcli.check.findings import Check, Finding, Report
from mcpcli.junit import Case, Suite, document, safe
from mcpcli.text import one_line

__all__ = ["github_annotations", "junit_xml"]


def _text(value: Any) -> str:
    """Server-controlled text as one safe line (`junit.safe`: XML 1.0 refuses what JSON
    strings can carry)."""
    return safe(one_line(str(value)))


def _area(check: Check) -> str:
    prefix = check.id.split(":", 1)[0]
    return {"legacy": "protocol", "modern": "protocol", "call": "calls"}.get(prefix, prefix)


def _line(finding: Finding) -> str:
    subject = f"{finding.subject}: " if finding.subject is not None else ""
    return _text(f"{finding.severity} {finding.code}: {subject}{finding.message}")


def junit_xml(report: Report, *, strict: bool = False) -> bytes:
    """The report as JUnit XML, one testcase per check."""
    name = _text(report.server.get("name") or "server")
    failing = {"error", "warning"} if strict else {"error"}
    cases = []
    for check in report.checks.values():
        failures = [f for f in check.findings if f.severity in failing]
        others = [f for f in check.findings if f.severity not in failing]
        case = Case(f"mcp-check.{_area(check)}", _text(check.title),
                    output="\n".join(_line(f) for f in others))
        if check.status(strict=strict) == "skipped":
            case.outcome, case.message = "skipped", _text(check.skipped or "")
        elif failures:
            case.outcome, case.type, case.message = "failure", failures[0].code, _text(failures[0].message)
            case.text = "\n".join(_line(f) for f in failures)
        cases.append(case)
    return document("mcp check", [Suite(f"mcp check {name}", cases)])


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(report: Report) -> list[str]:
    """GitHub Actions workflow commands, one per error and warning."""
    lines = []
    for finding in report.findings:
        if finding.severity == "info":
            continue
        title = _escape_property(f"mcp check: {finding.code}")
        subject = f"{finding.subject}: " if finding.subject is not None else ""
        message = _escape_data(_text(subject + finding.message))
        lines.append(f"::{finding.severity} title={title}::{message}")
    return lines
