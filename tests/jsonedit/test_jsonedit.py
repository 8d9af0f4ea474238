"""`mcpcli.jsonedit` on the hand-written shapes editors leave behind: comments where a member
goes, trailing commas, one-line objects, a BOM, and text it must refuse."""

from __future__ import annotations

import pytest

from mcpcli.jsonedit import JsonEditError, remove_member, set_member

ENTRY = {"command": "x"}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # A comment after the last member stays on its line; the new member follows it.
        ('{\n  "s": {\n    "a": 1 // note\n  }\n}', '{\n  "s": {\n    "a": 1, // note\n    "n": {\n      "command": "x"\n    }\n  }\n}'),
        # A trailing comma is kept, and the new member gets one too.
        ('{\n  "s": {\n    "a": 1,\n  },\n}', '{\n  "s": {\n    "a": 1,\n    "n": {\n      "command": "x"\n    },\n  },\n}'),
        # A one-line object stays on one line.
        ('{"s": {"a": 1}}', '{"s": {"a": 1, "n": {"command": "x"}}}'),
        # An object holding only a comment.
        ('{\n\t"s": {\n\t\t// none yet\n\t}\n}', '{\n\t"s": {\n\t\t// none yet\n\t\t"n": {\n\t\t\t"command": "x"\n\t\t}\n\t}\n}'),
        # A BOM stays first.
        ('\ufeff{"s": {}}', '\ufeff{"s": {\n  "n": {\n    "command": "x"\n  }\n}}'),
        # A missing container is created inside the top-level object.
        ('{\n    "a": [1, 2] /* list */\n}', '{\n    "a": [1, 2], /* list */\n    "s": {\n        "n": {\n            "command": "x"\n        }\n    }\n}'),
    ],
)
def test_insert_keeps_everything_else_and_reverses(before: str, after: str) -> None:
    edited, replaced = set_member(before, ["s"], "n", ENTRY)
    assert (edited, replaced) == (after, False)
    if '"s"' in before:
        assert remove_member(edited, ["s"], "n") == before


def test_replacing_keeps_the_members_neighbours_and_comments() -> None:
    before = '{\n  "s": {\n    // first\n    "n": {"command": "old"}, // the one\n    "z": 2\n  }\n}'
    edited, replaced = set_member(before, ["s"], "n", ENTRY)
    assert replaced
    assert edited == '{\n  "s": {\n    // first\n    "n": {\n      "command": "x"\n    }, // the one\n    "z": 2\n  }\n}'


def test_removing_the_first_of_several_members() -> None:
    before = '{\n  "s": {\n    "n": 1,\n    "z": 2\n  }\n}'
    assert remove_member(before, ["s"], "n") == '{\n  "s": {\n    "z": 2\n  }\n}'
    assert remove_member(before, ["s"], "missing") is None
    assert remove_member(before, ["t"], "n") is None


@pytest.mark.parametrize(
    "text",
    ['{"s": [1]}', "[1]", '{"s": {} ', '{"s": {}} x', '{"s": /* open', "{'s': {}}", '{"s": {"a" 1}}'],
)
def test_text_that_cannot_be_edited_safely_is_refused(text: str) -> None:
    with pytest.raises(JsonEditError):
        set_member(text, ["s"], "n", ENTRY)
