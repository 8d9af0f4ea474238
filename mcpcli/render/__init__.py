"""Human renderings of MCP results for a terminal (rich; imported only on a TTY).

Owns how a result looks to a person: tables, details, content blocks, and saving
binary content to files. Everything the server controls goes through
`mcpcli.text.printable` first. Commands call these through
`Output.emit(..., human=render.tools_table)`. It may import `mcpcli.output`
and `mcpcli.text` (and rich, lazily), and nothing of click or the CLI
(`mcpcli.cli`): what it reports goes to a callable it is given (`save_blobs`).
"""

from __future__ import annotations

from mcpcli.render.agents import grep_matches
from mcpcli.render.check import check_report
from mcpcli.render.content import (
    call_result,
    decoded,
    prompt_messages,
    resource_contents,
    save_blobs,
    update_event,
)
from mcpcli.render.doctor import doctor_report
from mcpcli.render.listings import (
    completion_values,
    prompt_detail,
    prompt_signature,
    prompts_table,
    resources_table,
    task_detail,
    tasks_table,
    templates_table,
    tool_detail,
    tool_signature,
    tools_table,
)
from mcpcli.render.servers import server_detail, server_info, servers_table
from mcpcli.render.sessions import session_summary, sessions_table

__all__ = [
    "call_result",
    "check_report",
    "completion_values",
    "decoded",
    "doctor_report",
    "grep_matches",
    "prompt_detail",
    "prompt_messages",
    "prompt_signature",
    "prompts_table",
    "resource_contents",
    "resources_table",
    "save_blobs",
    "server_detail",
    "server_info",
    "servers_table",
    "session_summary",
    "sessions_table",
    "task_detail",
    "tasks_table",
    "templates_table",
    "tool_detail",
    "tool_signature",
    "tools_table",
    "update_event",
]
