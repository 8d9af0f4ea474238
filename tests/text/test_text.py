"""The one escaper of server-controlled text (`mcpcli.text`)."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest

from mcpcli.text import REDACTED, SecretValues, json_safe, one_line, printable, redact, verbatim

#: One representative of each class that must never reach a terminal raw.
UNSAFE = {
    "C0 ESC": "\x1b",
    "C0 BEL": "\x07",
    "carriage return": "\r",
    "DEL": "\x7f",
    "C1 CSI": "\x9b",
    "C1 NEL": "\x85",
    "bidi LRE": "\u202a",
    "bidi RLO": "\u202e",
    "bidi LRI": "\u2066",
    "bidi PDI": "\u2069",
    "zero-width space": "\u200b",
    "zero-width joiner": "\u200d",
    "right-to-left mark": "\u200f",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "BOM": "\ufeff",
    "word joiner": "\u2060",
    "soft hyphen": "\u00ad",
    "Arabic letter mark": "\u061c",
    "tag": "\U000e0041",
}


@pytest.mark.parametrize("name", sorted(UNSAFE))
def test_each_unsafe_class_is_escaped_visibly(name: str) -> None:
    ch = UNSAFE[name]
    shown = printable(f"a{ch}b")
    assert ch not in shown
    code = ord(ch)
    escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
    assert shown == f"a{escape}b"
    assert printable(f"a{ch}b", keep_newlines=False) == f"a{escape}b"


def test_every_format_character_of_this_python_is_covered() -> None:
    """Every Cf, Zl and Zp code point in this Python's Unicode database is escaped."""
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp", "Cc")
        and chr(code) not in "\t\n"
        and chr(code) in printable(chr(code))
    ]
    assert missed == []


def test_ordinary_text_is_untouched() -> None:
    text = "héllo wörld — 日本語 עברית مرحبا 👍 tab\there\nnewline"
    assert printable(text) == text
    assert printable("a\tb\nc", keep_newlines=False) == "a b c"


def test_json_safe_keeps_the_value_and_spells_out_unsafe_characters() -> None:
    value = {"message": "x" + "".join(UNSAFE.values()) + "é日"}
    encoded = json.dumps(value, ensure_ascii=False)
    safe = json_safe(encoded)
    assert json.loads(safe) == value
    assert all(ch not in safe for ch in UNSAFE.values())
    assert "é日" in safe  # ordinary non-ASCII stays readable
    assert "\\udb40\\udc41" in safe  # an astral tag character as a surrogate pair


def test_one_line_joins_lines_and_escapes() -> None:
    assert one_line("  first\r\nsecond\tpart \x1b[2J\n") == "first second part \\x1b[2J"
    assert one_line("a\nb\rc", newline=" | ") == "a | b | c"
    assert one_line("\u202eevil\u2028x") == "\\u202eevil\\u2028x"  # U+2028 is shown, not obeyed
    assert one_line("<p>\n   a  \n\n b</p>", squeeze=True) == "<p> a b</p>"
    assert one_line("abcdef", limit=3) == "abc..."
    assert one_line("abc", limit=3) == "abc"


def test_verbatim_shows_tab_and_newline_as_escapes() -> None:
    assert verbatim("https://a.example/\tx\ny\x1b") == "https://a.example/\\x09x\\x0ay\\x1b"
    assert verbatim("abcdef", limit=4) == "abcd..."


def test_redact_replaces_known_secret_values_inside_any_string() -> None:
    secrets = SecretValues(["abc-123", "abc-123-longer", "short", None, "", "Bearer tok-9876"])
    message = {
        "result": {"content": [{"type": "text", "text": "A=abc-123-longer B=abc-123 C=short tok-9876"}]},
        "env abc-123": 7,
        "apiKey": "anything",
        "progressToken": "abc-123",
        "n": 5,
    }
    out = redact(message, secrets)
    # Longest first: the longer value is replaced whole; under 6 characters is left alone.
    assert out["result"]["content"][0]["text"] == f"A={REDACTED} B={REDACTED} C=short {REDACTED}"
    assert out[f"env {REDACTED}"] == 7
    assert out["apiKey"] == REDACTED
    assert out["progressToken"] == REDACTED  # by value, whatever the key
    assert out["n"] == 5
    assert message["result"]["content"][0]["text"].startswith("A=abc-123-longer")  # a copy
    assert redact(message) == {**message, "apiKey": REDACTED}  # no secrets: by key only


def test_secret_values_learnt_later_count_from_then_on() -> None:
    secrets = SecretValues()
    assert redact("x helper-output y", secrets) == "x helper-output y"
    secrets.add("helper-output")
    assert redact("x helper-output y", secrets) == f"x {REDACTED} y"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Authorization: Bearer sk-abc", f"Authorization: Bearer {REDACTED}"),
        ("authorization: bearer eyJhbGciOi.J9.x-y_z==", f"authorization: bearer {REDACTED}"),
        ("the bearer of bad news", "the bearer of bad news"),  # prose stays
        ("Bearer abc", "Bearer abc"),  # too short to be a token
    ],
)
def test_a_quoted_bearer_credential_is_redacted_even_when_unknown(text: str, shown: str) -> None:
    assert redact({"message": text}) == {"message": shown}
