"""A test run written down: for people, as JSON, and as JUnit XML for CI.

JUnit: one `<testsuite>` per test file (named by its path), one `<testcase>` per
test (`classname` the file's path, `name` the test's), a `<failure>` for an
assertion that did not hold and an `<error>` for a test that could not run,
each with the first message as `message` and all of them as text. Server text
in messages is escaped as on a terminal, so the XML is always well formed.
"""

from __future__ import annotations

from typing import Any

from mcpcli.testfile.run import Outcome

__all__ = ["human", "junit_xml", "summary"]


def summary(outcomes: list[Outcome], elapsed: float) -> dict[str, Any]:
    """The `--json` report: counts, then one object per test in file order."""
    counts = {status: sum(1 for o in outcomes if o.status == status) for status in ("passed", "failed", "error")}
    return {
        "passed": counts["passed"], "failed": counts["failed"], "errors": counts["error"],
        "duration": round(elapsed, 6), "tests": [o.to_json() for o in outcomes],
    }


def human(outcomes: list[Outcome], elapsed: float) -> str:
    """One line per test (PASS, FAIL, ERROR), the reasons under it, then the counts."""
    from mcpcli.text import one_line

    lines = []
    for outcome in outcomes:
        label = {"passed": "PASS ", "failed": "FAIL ", "error": "ERROR"}[outcome.status]
        name = one_line(f"{outcome.suite.path}: {outcome.case.name}")
        lines.append(f"{label} {name} ({_ms(outcome.duration)})")
        lines.extend(f"      {one_line(failure)}" for failure in outcome.failures)
    report = summary(outcomes, elapsed)
    errors = f"{report['errors']} error" + ("" if report["errors"] == 1 else "s")
    lines.append(f"{report['passed']} passed, {report['failed']} failed, {errors} in {elapsed:.2f}s")
    return "\n".join(lines) + "\n"


def junit_xml(outcomes: list[Outcome], elapsed: float) -> bytes:
    """The run as a JUnit XML document (UTF-8, with its declaration)."""
    import xml.etree.ElementTree as ET

    report = summary(outcomes, elapsed)
    root = ET.Element("testsuites", {
        "name": "mcp test", "tests": str(len(outcomes)), "failures": str(report["failed"]),
        "errors": str(report["errors"]), "time": _seconds(elapsed),
    })
    files: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        files.setdefault(outcome.suite.path, []).append(outcome)
    for path, items in files.items():
        suite = ET.SubElement(root, "testsuite", {
            "name": _xml(path), "tests": str(len(items)),
            "failures": str(sum(1 for o in items if o.status == "failed")),
            "errors": str(sum(1 for o in items if o.status == "error")),
            "time": _seconds(sum(o.duration for o in items)),
        })
        for outcome in items:
            case = ET.SubElement(suite, "testcase", {
                "classname": _xml(path), "name": _xml(outcome.case.name), "time": _seconds(outcome.duration),
            })
            if outcome.status != "passed":
                tag = "failure" if outcome.status == "failed" else "error"
                first = outcome.failures[0] if outcome.failures else tag
                element = ET.SubElement(case, tag, {"message": _xml(first), "type": tag})
                element.text = _xml("\n".join(outcome.failures))
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document + b"\n"


def _xml(text: str) -> str:
    """Text XML 1.0 can carry: control characters shown as escapes, no lone surrogates."""
    from mcpcli.text import printable

    shown = printable(text)
    return shown.encode("utf-8", "backslashreplace").decode("utf-8")


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _ms(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 10 else f"{value:.1f} s"
