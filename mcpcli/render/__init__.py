"""Human renderings of MCP results for a terminal (rich; imported only on a TTY).

Everything the server controls is passed through `sanitize` first. Commands call
these through `Output.emit(..., human=render.tools_table)`.
"""

from __future__ import annotations

from mcpcli.render.content import (
    call_result,
    decoded,
    prompt_messages,
    resource_contents,
    save_blobs,
    update_event,
)
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

__all__ = [
    "call_result",
    "completion_values",
    "decoded",
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
    "task_detail",
    "tasks_table",
    "templates_table",
    "tool_detail",
    "tool_signature",
    "tools_table",
    "update_event",
]
