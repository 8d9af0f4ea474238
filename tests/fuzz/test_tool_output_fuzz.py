"""What a `mcp serve` tool prints (`mcpcli.toolsfile.results.tool_result`) against random output.

A script's stdout is outside input to the server: with `output: json` or
`output: mcp` it is parsed as JSON. Property: any bytes, for every format, give
a CallToolResult the server can encode on the wire (`jsonrpc.encode`): unusable
output becomes an `isError` result saying why, never an exception. The one exception
is the one `output: mcp` documents: `{"error": {code, message, data?}}` fails the call
with that JSON-RPC error, which must be as sendable.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from fuzz.strategies import NASTY_JSON, dumps, json_values
from mcpcli.core import jsonrpc
from mcpcli.errors import RPCError
from mcpcli.toolsfile.model import OutputSpec
from mcpcli.toolsfile.process import RunResult
from mcpcli.toolsfile.results import Masker, tool_result

outputs = (
    st.binary(max_size=200)
    | json_values.map(dumps)
    | st.fixed_dictionaries({"content": st.lists(json_values, max_size=2)},
                            optional={"structuredContent": json_values, "isError": json_values}).map(dumps)
    | st.sampled_from(NASTY_JSON)
    | st.sampled_from([b'{"x": NaN}', b'{"content": [], "structuredContent": {"x": -Infinity}}', b"[1e999]"])
)


@given(outputs, st.sampled_from(["text", "json", "mcp", "image"]), st.booleans())
@example(b'{"x": NaN}', "json", False)  # parsed, then unencodable: the reply could not be sent
@example(b'{"content": [], "structuredContent": {"x": 1e999}}', "mcp", False)
@example(b"[" * 3000, "json", False)  # RecursionError out of json.loads
@example(b'{"":"","":0,"error":{"code":0,"message":"..8du"}}', "mcp", False)  # the error it documents
@example(b'{"content":[{"type":[]}]}', "mcp", False)  # an unhashable type: once a TypeError
def test_any_output_gives_a_sendable_result(stdout: bytes, fmt: str, objects_only: bool) -> None:
    run = RunResult(returncode=0, signal=None, stdout=stdout, stderr=b"", stdout_total=len(stdout),
                    stderr_total=0)
    output = OutputSpec(format=fmt, mime_type="image/png" if fmt == "image" else None)
    try:
        result = tool_result(run, output, ok_codes=frozenset({0}), timeout=1.0, mask=Masker([]),
                             structured_objects_only=objects_only, output_dir=None)
    except RPCError as exc:
        assert fmt == "mcp"
        error = jsonrpc.ErrorObject(exc.code, exc.rpc_message, exc.data)
        jsonrpc.encode(jsonrpc.ErrorResponse(1, error)).decode("utf-8")
        return
    assert isinstance(result.get("content"), list)
    jsonrpc.encode(jsonrpc.Response(1, result)).decode("utf-8")
