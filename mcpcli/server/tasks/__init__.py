"""Tool calls that run as tasks, on the server: the store and the methods of both designs.

`store` holds the tasks of one server (`Task`, `TaskStore`, and the `Escalation`
that turns a slow 2026 tools/call into a task); `records` is the seam between
what of a task persists (`TaskRecord`, in a `TaskRecords`: `MemoryRecords`,
SQLite, Redis) and what lives only in the process that runs it (`Task`); `handlers` answers the 2026-07-28
extension's `tasks/*` methods and decides whether a tools/call may become a
task; `legacy` answers the 2025-11-25 core tasks (`params.task`, `tasks/result`)
on the same store. They receive the server's `Runtime` (`mcpcli.server._state`)
and may import `calls`, `mrtr`, `meta`, `backend`, `subscriptions`, `protocol`,
`jsonrpc`, `errors` and `rpc`; never `core`, `handlers` or the HTTP modules.
Client-side tasks are `mcpcli.client.tasks`; the wire facts both share are in `mcpcli.core.protocol`.
"""
