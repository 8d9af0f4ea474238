"""`mcp inspect`: a full-screen terminal inspector for one server, on Textual.

What a person clicks becomes the `mcp` command line that does the same, so the
inspector is a way to learn the scriptable commands, not a second client. The
modules split by job: `cmdline` (the equivalent command lines) and `forms`
(schemas to form fields, and back to values) and `uritemplate` are pure and
import no Textual; `bridge` hands what the client receives (server requests,
notifications, a stdio server's stderr, our own warnings) to the app; `app`,
`panes`, `formscreen`, `results`, `dialogs` and `activity` are the Textual app.
Textual is imported only by those, and only `mcp inspect` imports them.
"""
