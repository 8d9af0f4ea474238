"""`mcp snapshot`, `diff` and `test` on an open session (`@NAME`, the real daemon): the same
surface and answers as the server started directly, and every test over the one session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import mcp_in
from sessions.test_real_daemon import pytestmark as daemon_mark
from sessions.test_real_daemon import real  # noqa: F401 - the fixture

pytestmark = [daemon_mark, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
V1, V2, SMOKE = str(HERE / "v1.yaml"), str(HERE / "v2.yaml"), str(HERE / "smoke.yaml")


def test_a_session_is_a_target_like_any_other(real: Path) -> None:  # noqa: F811
    opened = mcp_in("session", "open", "fixture", "--json", "--", sys.executable, "-m", "mcpcli", "serve", V1)
    assert opened.code == 0, opened
    direct = mcp_in("snapshot", V1)
    via = mcp_in("snapshot", "@fixture")
    assert via.code == 0, via
    assert via.stdout == direct.stdout
    r = mcp_in("diff", "@fixture", V2, "--json")
    assert r.code == 1
    assert sum(c["breaking"] for c in json.loads(r.stdout)["changes"]) == 7
    r = mcp_in("test", SMOKE, "--target", "@fixture")
    assert r.code == 0, r
    assert r.stdout.splitlines()[-1].startswith("9 passed, 0 failed, 0 errors")
    listed = mcp_in("session", "list", "--json")
    (session,) = json.loads(listed.stdout)["sessions"]
    assert session["calls"] >= 9
