"""The core's plain value classes behave as the dataclasses they replaced: equal by
fields and type, shown with their fields, not hashable, no attribute outside the fields;
and the fast path imports no dataclass of the core (making one compiles code)."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys

import pytest

from mcpcli.core.flow import ListTools, Notify, Send
from mcpcli.core.jsonrpc import Request, Response


def test_equal_by_fields_and_type() -> None:
    assert Send("tools/list") == Send("tools/list", None)
    assert Send("tools/list") != Send("tools/list", {"cursor": "c"})
    assert Notify("x") != Send("x")
    assert ListTools() == ListTools()
    assert Response(1).result == {} and Response(1) == Response(1, {})


def test_shown_with_their_fields_and_closed_to_others() -> None:
    assert repr(Request("ping", None, 3)) == "Request(id=3, method='ping', params=None)"
    with pytest.raises(TypeError):
        hash(Notify("x"))
    with pytest.raises(AttributeError):
        Notify("x").extra = 1  # type: ignore[attr-defined]


@pytest.mark.slow
def test_no_class_the_fast_path_imports_from_the_core_is_a_dataclass() -> None:
    """A dataclass `exec`s the source of its methods when its class is made (~4 M
    instructions), and the one-shot fast path imports these at every start."""
    code = ("import sys, mcpcli.cli.oneshot, mcpcli.cli._oneshot_client; "
            "print(' '.join(m for m in sys.modules if m.startswith('mcpcli.core')))")
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "mcpcli.core.exchange" in imported
    found = []
    for name in imported:
        module = importlib.import_module(name)
        found += [f"{name}.{attr}" for attr, value in vars(module).items()
                  if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value)]
    assert not found
