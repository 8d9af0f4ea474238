"""What `mcp check` reports: findings with stable codes, grouped by the check that made them.

A *finding* is one problem (or note) about the server: a severity, a stable `code`
(documented in the README and listed in `CODES`), the tool, resource or prompt it
is about (`subject`, or None for the server as a whole) and a one-line message. A
*check* is one thing that was tested (the legacy handshake, `tools/list`'s pages,
one tool's call): it passed, failed, or was skipped, and it becomes one JUnit
testcase. The severities follow one rule:

- error: the server breaks a requirement of the negotiated revision in a way
  clients notice (a MUST whose breach the spec does not tell clients to tolerate),
  or offers something no client can use (an invalid schema, a duplicate name);
- warning: a SHOULD, a MUST the spec tells clients to tolerate, or something a
  major model provider or client is known to reject (portability);
- info: what only an opt-in client mode would reject (OpenAI's strict mode), and
  other notes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["CODES", "Check", "CodeInfo", "Finding", "Report", "Severity"]

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class CodeInfo:
    """One documented finding code: the area it belongs to and what it means."""

    area: str
    meaning: str


#: Every code a finding may carry (the README's table is this, in words). A code is
#: stable once released: scripts filter on it.
CODES: dict[str, CodeInfo] = {
    # -- protocol ---------------------------------------------------------------------
    "connect": CodeInfo("protocol", "an era the server claims cannot be reached (its handshake fails)"),
    "handshake-shape": CodeInfo("protocol", "the initialize or server/discover result does not have the revision's shape"),
    "version": CodeInfo("protocol", "version negotiation went wrong (a claimed version refused or swapped)"),
    "ping": CodeInfo("protocol", "ping is not answered with an empty result within the bound"),
    "pagination": CodeInfo("protocol", "a list's pages go wrong: a cursor repeats, or pages never end"),
    "list-failed": CodeInfo("protocol", "a list endpoint of a declared capability answers with an error"),
    "capability": CodeInfo("protocol", "declared capabilities and what the server answers disagree"),
    "unknown-method": CodeInfo("protocol", "an unknown method is not answered with the JSON-RPC error -32601"),
    "unknown-tool": CodeInfo("protocol", "a call of an unknown tool is not answered with a JSON-RPC error (-32602)"),
    "result-shape": CodeInfo("protocol", "a result does not have the shape the negotiated revision gives it"),
    "notification-order": CodeInfo("protocol", "a message comes when the revision says it should not (a request "
                                               "before the handshake ends, progress after its request's answer)"),
    "notification-forbidden": CodeInfo("protocol", "a 2026-07-28 server sends what it must not: a request, a log "
                                                   "message nobody asked for, a change notification outside a "
                                                   "subscription"),
    "progress": CodeInfo("protocol", "progress notifications that do not increase or name no request of ours"),
    "timeout": CodeInfo("protocol", "a request is not answered within --timeout"),
    "connection-lost": CodeInfo("protocol", "the server closed the connection or exited during the check"),
    # -- lint ---------------------------------------------------------------------------
    "tool-name": CodeInfo("lint", "a tool name breaks the spec's rule (1-128 characters of A-Z a-z 0-9 _ - .)"),
    "duplicate-name": CodeInfo("lint", "two tools or prompts share a name (or two resources a URI)"),
    "missing-description": CodeInfo("lint", "a tool has no description (models choose tools by it)"),
    "input-schema": CodeInfo("lint", "an inputSchema is missing or is not a `type: object` schema"),
    "schema-invalid": CodeInfo("lint", "an inputSchema is not a valid JSON Schema"),
    "schema-required": CodeInfo("lint", "`required` names a property the schema does not define"),
    "schema-ref": CodeInfo("lint", "a `$ref` points at nothing in the schema"),
    "schema-remote-ref": CodeInfo("lint", "a `$ref` points at the network (clients never fetch it)"),
    "output-schema": CodeInfo("lint", "an outputSchema is invalid (or, up to 2025-11-25, not `type: object`)"),
    "tool-header": CodeInfo("lint", "an `x-mcp-header` annotation HTTP clients must refuse (they drop the tool)"),
    # -- calls --------------------------------------------------------------------------
    "call-failed": CodeInfo("calls", "a read-only tool that needs no arguments failed when called"),
    "structured-content": CodeInfo("calls", "a result's structuredContent is missing or does not match the "
                                            "tool's outputSchema"),
    # -- model providers ---------------------------------------------------------------
    "provider-tool-name": CodeInfo("provider", "a model provider's API refuses the tool's name"),
    "provider-property-name": CodeInfo("provider", "a model provider's API refuses an argument's name"),
    "provider-schema-root": CodeInfo("provider", "a model provider's API refuses the schema's top level "
                                                 "(composition keywords there)"),
    "provider-tool-count": CodeInfo("provider", "more tools than a model provider accepts in one request"),
    "provider-keyword": CodeInfo("provider", "keywords outside the JSON Schema subset a provider's API reads"),
    "provider-strict": CodeInfo("provider", "what OpenAI's opt-in strict mode would refuse"),
}


@dataclass(frozen=True)
class Finding:
    """One problem or note about the server."""

    severity: Severity
    code: str
    message: str
    subject: str | None = None
    #: The check that made it (a JUnit testcase's name).
    check: str = ""
    #: For provider findings: which provider's rule (`openai`, `anthropic`, `gemini`).
    provider: str | None = None

    def __post_init__(self) -> None:
        if self.code not in CODES:  # a typo here would be an undocumented code
            raise ValueError(f"undocumented finding code {self.code!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "severity": self.severity,
            "code": self.code,
            "subject": self.subject,
            "message": self.message,
            "check": self.check,
        }
        if self.provider is not None:
            out["provider"] = self.provider
        return out


@dataclass
class Check:
    """One thing tested; its status comes from its findings unless it was skipped."""

    id: str
    title: str
    skipped: str | None = None
    findings: list[Finding] = field(default_factory=list)

    def status(self, *, strict: bool = False) -> str:
        """`skipped`, `failed` (an error, or a warning under --strict), `warning` or `passed`."""
        if self.skipped is not None:
            return "skipped"
        severities = {f.severity for f in self.findings}
        if "error" in severities or (strict and "warning" in severities):
            return "failed"
        if "warning" in severities:
            return "warning"
        return "passed"


@dataclass
class Report:
    """Everything one `mcp check` run found, in the order the checks ran."""

    checks: dict[str, Check] = field(default_factory=dict)
    #: Facts about the server for the report's header (name, version, eras...).
    server: dict[str, Any] = field(default_factory=dict)

    def check(self, check_id: str, title: str) -> Check:
        """The check `check_id`, registered now if it is new (a check with no findings passed)."""
        if check_id not in self.checks:
            self.checks[check_id] = Check(check_id, title)
        return self.checks[check_id]

    def skip(self, check_id: str, title: str, reason: str) -> None:
        self.check(check_id, title).skipped = reason

    def add(
        self,
        check_id: str,
        severity: Severity,
        code: str,
        message: str,
        subject: str | None = None,
        *,
        title: str | None = None,
        provider: str | None = None,
    ) -> Finding:
        check = self.check(check_id, title or check_id)
        finding = Finding(severity, code, message, subject, check_id, provider)
        if finding not in check.findings:  # the same problem seen twice is one finding
            check.findings.append(finding)
        return finding

    @property
    def findings(self) -> list[Finding]:
        return [f for check in self.checks.values() for f in check.findings]

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def ok(self, *, strict: bool = False) -> bool:
        """No error (and, under --strict, no warning either)."""
        failing: Iterable[str] = ("error", "warning") if strict else ("error",)
        return not any(f.severity in failing for f in self.findings)

    def to_json(self, *, strict: bool = False) -> dict[str, Any]:
        """What `mcp check --json` prints."""
        return {
            "ok": self.ok(strict=strict),
            "strict": strict,
            "server": self.server,
            "summary": {
                "errors": self.count("error"),
                "warnings": self.count("warning"),
                "infos": self.count("info"),
                "checks": len(self.checks),
            },
            "checks": [
                {"id": c.id, "title": c.title, "status": c.status(strict=strict),
                 **({"skipped": c.skipped} if c.skipped is not None else {})}
                for c in self.checks.values()
            ],
            "findings": [f.to_json() for f in self.findings],
        }
