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
    """The run as a JUnit XML document (UTF-8, with its declaration): a suite per file."""
    from mcpcli.junit import Case, Suite, document

    suites: dict[str, Suite] = {}
    for outcome in outcomes:
        path = outcome.suite.path
        suite = suites.setdefault(path, Suite(path, time=0.0))
        suite.time = (suite.time or 0.0) + outcome.duration
        case = Case(path, outcome.case.name, time=outcome.duration)
        if outcome.status != "passed":
            case.outcome = "failure" if outcome.status == "failed" else "error"
            case.message = outcome.failures[0] if outcome.failures else case.outcome
            case.text = "\n".join(outcome.failures)
        suite.cases.append(case)
    return document("mcp test", list(suites.values()), time=elapsed)


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _ms(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 10 else f"{value:.1f} s"
