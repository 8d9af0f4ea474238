"""A headless 'browser' for tests: GET the URL given as argv[1], following redirects.

The fake authorization server redirects at once to the loopback listener of the
`mcp` process under test, so this completes a sign-in without a person. If
$FAKE_BROWSER_LOG is set, it appends (one JSON object per line) the URL it was
asked to open, plus its own argv and environment and those of its parent (the
`mcp` process, which holds tokens in memory at that moment) as read from /proc,
so tests can check that no secret ever reaches an argv or an environment.
"""

import json
import os
import sys
import urllib.request


def proc(pid: str, name: str) -> str:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


url = sys.argv[1]
print("Opening in existing browser session.", flush=True)  # launchers chatter on stdout
log = os.environ.get("FAKE_BROWSER_LOG")
if log:
    parent = str(os.getppid())
    entry = {
        "url": url,
        "argv": proc("self", "cmdline"),
        "environ": proc("self", "environ"),
        "parent_argv": proc(parent, "cmdline"),
        "parent_environ": proc(parent, "environ"),
    }
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(url, timeout=20) as resp:
        resp.read()
except Exception as exc:
    print(f"fake-browser: {type(exc).__name__}", file=sys.stderr)
