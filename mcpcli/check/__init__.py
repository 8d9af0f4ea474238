"""`mcp check`: whether a server is correct and usable by every client.

The checks run against a live connection (`runner.run_check`, handed a way to
connect) and collect findings with stable codes (`findings`): the protocol
(`protocol_checks`, `traffic`, `shapes`), the lint of what the server lists
(`lint`, `schemas`), the rules of the major model providers (`providers`) and
calls of the tools that are safe to call (`calls`). `report` writes JUnit XML and
GitHub Actions annotations; the human rendering is `mcpcli.render.check`.
"""

from mcpcli.check.findings import CODES, Finding, Report
from mcpcli.check.protocol_checks import CheckOptions
from mcpcli.check.runner import Connect, run_check
from mcpcli.check.traffic import Traffic

__all__ = ["CODES", "CheckOptions", "Connect", "Finding", "Report", "Traffic", "run_check"]
