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

import os
import tempfile
import xml.etree.ElementTree as ET
from typing import Any

from mcpcli.check.findings import Check, Finding, Report
from mcpcli.text import one_line

__all__ = ["github_annotations", "junit_xml", "write_junit"]


def _text(value: Any) -> str:
    """Server-controlled text as one safe line: no control characters, lone surrogates or
    U+FFFE/U+FFFF (XML 1.0 refuses them; JSON strings can carry them)."""
    text = one_line(str(value)).encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")


def _area(check: Check) -> str:
    prefix = check.id.split(":", 1)[0]
    return {"legacy": "protocol", "modern": "protocol", "call": "calls"}.get(prefix, prefix)


def _line(finding: Finding) -> str:
    subject = f"{finding.subject}: " if finding.subject is not None else ""
    return _text(f"{finding.severity} {finding.code}: {subject}{finding.message}")


def junit_xml(report: Report, *, strict: bool = False) -> str:
    """The report as JUnit XML, one testcase per check."""
    name = _text(report.server.get("name") or "server")
    checks = list(report.checks.values())
    statuses = [c.status(strict=strict) for c in checks]
    counts = {"tests": str(len(checks)), "failures": str(statuses.count("failed")), "errors": "0",
              "skipped": str(statuses.count("skipped"))}
    suites = ET.Element("testsuites", {"name": "mcp check", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": f"mcp check {name}", **counts})
    for check, status in zip(checks, statuses, strict=True):
        case = ET.SubElement(suite, "testcase", {"classname": f"mcp-check.{_area(check)}",
                                                 "name": _text(check.title)})
        failing = {"error", "warning"} if strict else {"error"}
        failures = [f for f in check.findings if f.severity in failing]
        others = [f for f in check.findings if f.severity not in failing]
        if status == "skipped":
            ET.SubElement(case, "skipped", {"message": _text(check.skipped or "")})
        elif failures:
            failure = ET.SubElement(case, "failure", {"type": failures[0].code,
                                                      "message": _text(failures[0].message)})
            failure.text = "\n".join(_line(f) for f in failures)
        if others:
            ET.SubElement(case, "system-out").text = "\n".join(_line(f) for f in others)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def write_junit(path: str, text: str) -> None:
    """Write `text` to `path` through a new file renamed over it: a symlink at `path` is
    replaced, never followed. OSError when it cannot be written."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".mcp-check-", suffix=".xml", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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
