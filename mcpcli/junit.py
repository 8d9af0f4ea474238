"""JUnit XML for CI (`mcp check --junit`, `mcp test --junit`), the standard library only.

One document of `testsuites`, each `testsuite` with its `testcase`s; a case that failed
holds a `<failure>` (or `<error>`, for one that could not run), a skipped one `<skipped>`,
and what else it has to say goes to `<system-out>`. Text a server controls is made safe
for XML 1.0 first (no control characters, lone surrogates or U+FFFE/U+FFFF).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Case", "Suite", "document", "safe"]

Outcome = Literal["passed", "failure", "error", "skipped"]


def safe(text: str) -> str:
    """Text XML 1.0 can carry: control characters shown as escapes, no lone surrogates."""
    from mcpcli.text import printable

    shown = printable(text).encode("utf-8", "backslashreplace").decode("utf-8")
    return shown.replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")


@dataclass
class Case:
    classname: str
    name: str
    outcome: Outcome = "passed"
    #: The failure's, error's or skip's message, and the failure's type.
    message: str = ""
    type: str = ""
    #: The failure's or error's body.
    text: str = ""
    #: Anything else the case reports.
    output: str = ""
    time: float | None = None


@dataclass
class Suite:
    name: str
    cases: list[Case] = field(default_factory=list)
    time: float | None = None


def _counts(cases: list[Case]) -> dict[str, str]:
    outcomes = [c.outcome for c in cases]
    return {"tests": str(len(cases)), "failures": str(outcomes.count("failure")),
            "errors": str(outcomes.count("error")), "skipped": str(outcomes.count("skipped"))}


def document(name: str, suites: list[Suite], *, time: float | None = None) -> bytes:
    """The JUnit XML document (UTF-8, with its declaration and a final newline)."""
    import xml.etree.ElementTree as ET

    every = [case for suite in suites for case in suite.cases]
    root = ET.Element("testsuites", {"name": safe(name), **_counts(every)})
    if time is not None:
        root.set("time", f"{time:.3f}")
    for suite in suites:
        element = ET.SubElement(root, "testsuite", {"name": safe(suite.name), **_counts(suite.cases)})
        if suite.time is not None:
            element.set("time", f"{suite.time:.3f}")
        for case in suite.cases:
            attributes = {"classname": safe(case.classname), "name": safe(case.name)}
            if case.time is not None:
                attributes["time"] = f"{case.time:.3f}"
            item = ET.SubElement(element, "testcase", attributes)
            if case.outcome == "skipped":
                ET.SubElement(item, "skipped", {"message": safe(case.message)})
            elif case.outcome in ("failure", "error"):
                failure = ET.SubElement(item, case.outcome, {"type": safe(case.type or case.outcome),
                                                             "message": safe(case.message)})
                failure.text = safe(case.text)
            if case.output:
                ET.SubElement(item, "system-out").text = safe(case.output)
    ET.indent(root)
    encoded: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return encoded + b"\n"
