"""Numbers from the wire are ASCII digits of a sane length.

`str.isdigit()` is true for "²" and "¹" (which `int()` refuses) and `int()`
refuses more than 4,300 digits: either used to end in a ValueError traceback.
"""

from __future__ import annotations

import pytest

from mcpcli.errors import TransportError
from mcpcli.server.http_stateful import _replay_for
from mcpcli.toolsfile.process import _describe_spawn_error
from mcpcli.transports._http1 import _parse_head


@pytest.mark.parametrize("code", ["²00", "2OO", "9" * 5000, "20", "2000", ""])
def test_a_status_line_without_three_ascii_digits_is_not_http(code: str) -> None:
    with pytest.raises(TransportError, match=r"did not answer with HTTP/1\.x"):
        _parse_head(f"HTTP/1.1 {code} OK\r\n\r\n".encode(), "srv")


def test_a_good_status_line_parses() -> None:
    status, headers, _ = _parse_head(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", "srv")
    assert status == 200
    assert ("content-type", "text/plain") in [(k.lower(), v) for k, v in headers]


@pytest.mark.parametrize("last", ["¹.1", "1.²", "9" * 5000 + ".1", "1." + "9" * 5000, "x", "1"])
def test_an_odd_last_event_id_names_no_stream(last: str) -> None:
    assert _replay_for(None, last) is None  # type: ignore[arg-type]  # never reaches the session


def test_a_lone_surrogate_in_a_tool_argument_is_not_called_a_nul_byte() -> None:
    try:
        "\udcff".encode()
    except UnicodeEncodeError as exc:
        message = _describe_spawn_error(exc, ["tool", "\udcff"], "/", {})
    assert message == "cannot start tool: an argument or variable is not valid Unicode"
