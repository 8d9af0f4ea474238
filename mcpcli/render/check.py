"""`mcp check` for a person: one line per check, its findings under it, a verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcli.render._common import JSON, _obj, _s

if TYPE_CHECKING:
    from rich.console import Console

#: How each check status and finding severity is marked (the marks read without colour too).
MARKS = {"passed": ("ok  ", "green"), "warning": ("warn", "yellow"), "failed": ("FAIL", "red"),
         "skipped": ("skip", "dim")}
SEVERITY_STYLE = {"error": "red", "warning": "yellow", "info": "dim"}


def check_report(console: Console, report: JSON, *, verbose: bool = False) -> None:
    """The report of `mcp check`: the server, each check, each finding, the verdict.
    Infos are counted, and shown with `verbose`."""
    server = _obj(report.get("server"))
    name = f"{_s(server.get('name') or '?')} {_s(server.get('version') or '')}".strip()
    checked = ", ".join(_s(era) for era in server.get("checked") or [])
    console.print(f"{name} ({checked or _s(server.get('protocolVersion'))}, {_s(server.get('transport'))})",
                  style="bold")
    findings: dict[str, list[JSON]] = {}
    for finding in report.get("findings") or []:
        if isinstance(finding, dict):
            findings.setdefault(str(finding.get("check")), []).append(finding)
    for check in report.get("checks") or []:
        if not isinstance(check, dict):
            continue
        mark, style = MARKS.get(str(check.get("status")), ("?   ", ""))
        line = f"{mark}  {_s(check.get('title'))}"
        if check.get("skipped"):
            line += f": {_s(check['skipped'])}"
        console.print(line, style=style if check.get("status") != "passed" else None)
        for finding in findings.get(str(check.get("id")), []):
            if finding.get("severity") == "info" and not verbose:
                continue
            _finding(console, finding)
    summary = _obj(report.get("summary"))
    errors, warnings, infos = (int(summary.get(k) or 0) for k in ("errors", "warnings", "infos"))
    parts = [f"{errors} error{'s' if errors != 1 else ''}", f"{warnings} warning{'s' if warnings != 1 else ''}",
             f"{infos} note{'s' if infos != 1 else ''}" + ("" if verbose or not infos else " (--verbose shows them)")]
    verdict = "passed" if report.get("ok") else "FAILED"
    if not report.get("ok") and not errors and report.get("strict"):
        verdict += " (--strict: warnings fail)"
    console.print()
    console.print(f"{', '.join(parts)}: {verdict}", style="bold green" if report.get("ok") else "bold red")


def _finding(console: Console, finding: JSON) -> None:
    from rich.text import Text

    severity = str(finding.get("severity"))
    text = Text("      ")
    text.append(f"{severity:<7} {_s(finding.get('code'))}", style=SEVERITY_STYLE.get(severity))
    subject: Any = finding.get("subject")
    if subject is not None:
        text.append(f"  {_s(subject)}", style="bold")
    text.append(f"  {_s(finding.get('message'))}")
    console.print(text)
