"""`mcp doctor`'s report: one line per check, the fix under each problem, then a verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpcli.render._common import JSON, _obj, _s

if TYPE_CHECKING:
    from rich.console import Console

_STYLES = {"ok": "green", "note": "yellow", "problem": "bold red"}


def doctor_report(console: Console, result: JSON) -> None:
    from rich.text import Text

    checks = [_obj(c) for c in result.get("checks", []) if isinstance(c, dict)]
    width = max((len(_s(c.get("name"))) for c in checks), default=0)
    for check in checks:
        status = _s(check.get("status"))
        line = Text()
        line.append(f"{status:<8} ", style=_STYLES.get(status, ""))
        line.append(f"{_s(check.get('name')):<{width}}  ", style="bold")
        line.append(_s(check.get("summary")))
        console.print(line, soft_wrap=True)
        indent = " " * (9 + width + 2)
        for detail in check.get("details") or []:
            console.print(Text(f"{indent}{_s(detail)}", style="dim"), soft_wrap=True)
        if check.get("fix"):
            label = "fix" if status == "problem" else "hint"
            console.print(Text(f"{indent}{label}: {_s(check.get('fix'))}"), soft_wrap=True)
    count = result.get("problems")
    if not count:
        console.print(Text("all is well", style="green"))
    else:
        console.print(Text(f"{count} problem{'s' if count != 1 else ''}", style="bold red"))
