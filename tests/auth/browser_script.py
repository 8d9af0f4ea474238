"""A headless 'browser' for tests: GET the URL given as argv[1], following redirects.

The fake authorization server redirects at once to the loopback listener of the
`mcp` process under test, so this completes a sign-in without a person. Every
URL it was asked to open is appended to $FAKE_BROWSER_LOG (if set).
"""

import os
import sys
import urllib.request

url = sys.argv[1]
log = os.environ.get("FAKE_BROWSER_LOG")
if log:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(url + "\n")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(url, timeout=20) as resp:
        resp.read()
except Exception as exc:
    print(f"fake-browser: {type(exc).__name__}", file=sys.stderr)
