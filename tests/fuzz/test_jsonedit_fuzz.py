"""`mcpcli.jsonedit`: inserting a member then removing it gives back the original text, in
any indentation and line ending, and the edited text parses to exactly the intended document."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcpcli.jsonedit import remove_member, set_member

keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
                      max_leaves=8)
layouts = st.sampled_from([None, 2, 4, "\t", 1])


def _text(doc: Any, indent: Any, crlf: bool) -> str:
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    return text.replace("\n", "\r\n") if crlf else text


@given(
    other=st.dictionaries(keys.filter(lambda k: k != "servers"), values, max_size=3),
    servers=st.dictionaries(keys, values, max_size=3),
    name=keys,
    value=values,
    indent=layouts,
    crlf=st.booleans(),
    newline_at_end=st.booleans(),
)
def test_insert_then_remove_is_the_identity(
    other: dict[str, Any], servers: dict[str, Any], name: str, value: Any, indent: Any, crlf: bool,
    newline_at_end: bool,
) -> None:
    doc = {**other, "servers": servers}
    text = _text(doc, indent, crlf) + (("\r\n" if crlf else "\n") if newline_at_end else "")
    edited, replaced = set_member(text, ["servers"], name, value)
    assert replaced == (name in servers)
    assert json.loads(edited) == {**other, "servers": {**servers, name: value}}
    if "\r\n" in text:  # no lone LF in a CRLF file
        assert "\n" not in edited.replace("\r\n", "")
    if not replaced:
        assert remove_member(edited, ["servers"], name) == text


@given(doc=st.dictionaries(keys, values, max_size=4), name=keys, indent=layouts)
def test_removing_a_member_leaves_valid_json_without_it(doc: dict[str, Any], name: str, indent: Any) -> None:
    text = json.dumps({"servers": {**doc, name: 1}, "after": True}, indent=indent, ensure_ascii=False)
    removed = remove_member(text, ["servers"], name)
    assert removed is not None
    assert json.loads(removed) == {"servers": {k: v for k, v in doc.items() if k != name}, "after": True}
