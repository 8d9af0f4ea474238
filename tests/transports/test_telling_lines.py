"""Which lines of a server's stderr an error quotes (`transports._spawn.telling_lines`): the
ones that say what went wrong, not the stack frames and banners around them (issue 22)."""

from __future__ import annotations

import pytest

from mcpcli.transports.spawn import STDERR_QUOTE, exit_message, quote_stderr, telling_lines

#: `node /nonexistent.js` (Node 20), as the transports keep it: each line stripped.
NODE_MISSING_MODULE = """\
node:internal/modules/cjs/loader:1210
throw err;
^
Error: Cannot find module '/nonexistent.js'
at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)
at Module._load (node:internal/modules/cjs/loader:1038:27)
at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
at node:internal/main/run_main_module:28:49 {
code: 'MODULE_NOT_FOUND',
requireStack: []
}
Node.js v20.20.2""".splitlines()

PYTHON_CHAINED = """\
starting the server
Traceback (most recent call last):
File "/srv/app.py", line 9, in load
return settings[name]
~~~~~~~~^^^^^^
KeyError: 'token'
During handling of the above exception, another exception occurred:
Traceback (most recent call last):
File "/srv/app.py", line 12, in <module>
raise RuntimeError("no token configured")
RuntimeError: no token configured""".splitlines()


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (NODE_MISSING_MODULE, ["Error: Cannot find module '/nonexistent.js'"]),
        (["Traceback (most recent call last):", 'File "/s.py", line 1, in <module>', "import nothere",
          "ModuleNotFoundError: No module named 'nothere'"], ["ModuleNotFoundError: No module named 'nothere'"]),
        (PYTHON_CHAINED, ["KeyError: 'token'", "RuntimeError: no token configured"]),
        # Nothing reads like an error: the last line, as before.
        (["listening", "got tools/call", "crashing now"], ["crashing now"]),
        # An error line, then more output: both, in order.
        (["error: config file ~/.srv.json is invalid", "falling back", "bye"],
         ["error: config file ~/.srv.json is invalid", "bye"]),
        # At most three: the last ones.
        ([f"warning: failed to load plugin {n}" for n in range(6)],
         [f"warning: failed to load plugin {n}" for n in (3, 4, 5)]),
        # Go's panic: the message, not the goroutine dump.
        (["panic: runtime error: index out of range [3] with length 0", "goroutine 1 [running]:",
          "main.(*Server).Run(0xc000010000)", "/src/main.go:12 +0x1d", "main.main()", "/src/main.go:30 +0x25",
          "exit status 2"],
         ["panic: runtime error: index out of range [3] with length 0"]),
        # Only noise: its last line rather than nothing.
        (["at x (y.js:1:2)", "Node.js v22.1.0"], ["Node.js v22.1.0"]),
        ([], []),
    ],
)
def test_the_telling_lines(tail: list[str], expected: list[str]) -> None:
    assert telling_lines(tail) == expected


def test_the_exit_message_quotes_them() -> None:
    assert exit_message(1, "", NODE_MISSING_MODULE) == (
        "server exited with code 1; its stderr says: Error: Cannot find module '/nonexistent.js'")
    assert exit_message(None, "before answering", []) == "server closed its stdout before answering"
    assert exit_message(-9, "", ["x"]) == "server was killed by SIGKILL; its stderr says: x"


def test_a_quote_made_from_fewer_lines_is_replaced_not_repeated() -> None:
    """The daemon quotes the whole tail again once the server is gone (the transport may
    have read less of it when it made its error)."""
    early = exit_message(1, "", NODE_MISSING_MODULE[:2])
    late = quote_stderr(f"session 'x' has exited: {early}", NODE_MISSING_MODULE)
    assert late == ("session 'x' has exited: server exited with code 1"
                    f"{STDERR_QUOTE}Error: Cannot find module '/nonexistent.js'")
    assert quote_stderr("the MCP handshake timed out after 5s", []) == "the MCP handshake timed out after 5s"
