"""Human renderings (in process): every content type, sanitising, saving, and the output modes."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from mcpcli import render
from mcpcli.cli._app import App
from mcpcli.errors import UsageError
from mcpcli.output import Output
from mcpcli.text import printable

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 24).decode()
WAV = base64.b64encode(b"RIFF" + b"\x00" * 40).decode()


def shown(fn: Any, *args: Any) -> str:
    buf = io.StringIO()
    fn(Console(file=buf, width=120, markup=False, highlight=False, color_system=None), *args)
    return buf.getvalue()


def test_every_content_type_of_a_tool_result(tmp_path: Path) -> None:
    result = {"content": [
        {"type": "text", "text": "line one\nline two"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "audio", "data": WAV, "mimeType": "audio/wav", "annotations": {"audience": ["user"]}},
        {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "mimeType": "text/plain",
         "description": "The A file"},
        {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "embedded text"}},
        {"type": "resource", "resource": {"uri": "file:///c.bin", "blob": PNG, "mimeType": "image/png"}},
        {"type": "future-type", "x": 1},
    ]}
    text = shown(render.call_result, result)
    assert "line one\nline two" in text
    assert "[image image/png, 32 B] (use --save-dir DIR to save it)" in text
    assert "[audio audio/wav, 44 B] (use --save-dir DIR to save it) (for user)" in text
    assert "→ file:///a.txt  a [text/plain]" in text and "The A file" in text
    assert "[resource file:///b.txt]\nembedded text" in text
    assert "[blob image/png, 32 B]" in text
    assert '"type": "future-type"' in text  # unknown blocks are shown as JSON, not dropped
    assert PNG not in text  # binary never reaches the terminal

    saved = shown(render.call_result, result, str(tmp_path / "out"))
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["audio-3.wav", "c.bin", "image-2.png"]
    # The console may wrap before a long temp path (pytest-xdist adds a popen-gwN level).
    assert f"saved to {tmp_path / 'out' / 'image-2.png'}" in " ".join(saved.split())


def test_structured_content_is_shown_when_no_text_carries_it() -> None:
    text = shown(render.call_result, {"content": [], "structuredContent": {"temp": 21}})
    assert '"temp": 21' in text
    text = shown(render.call_result, {"content": [{"type": "text", "text": "21 degrees"}],
                                      "structuredContent": {"temp": 21}})
    assert '"temp"' not in text and "21 degrees" in text
    assert "(no content)" in shown(render.call_result, {"content": []})


def test_a_tool_error_is_shown_as_its_content_only() -> None:
    # The one `mcp: error: tool ... reported an error` line on stderr labels it (issue 13).
    text = shown(render.call_result, {"content": [{"type": "text", "text": "boom"}], "isError": True})
    assert text.startswith("boom") and "reported an error" not in text


def test_tools_list_keeps_one_line_per_tool_and_marks_what_it_cut() -> None:
    long = "Read the complete contents of a file from the file system. " * 4
    text = shown(render.tools_table, {"tools": [
        {"name": "read_file", "description": long},
        {"name": "multi", "description": "First line.\nSecond line with details."},
        {"name": "one", "description": "Just this."},
    ]})
    lines = text.splitlines()
    assert len(lines) == 4, text  # a header and one line per tool: no word left alone
    assert lines[1].rstrip().endswith("…") and len(lines[1].rstrip()) <= 120
    assert "First line. …" in lines[2] and "Second" not in text
    assert lines[3].rstrip().endswith("Just this.")


def test_server_text_is_sanitised_everywhere() -> None:
    evil = "x\x1b[31mred\x07\u202eevil"
    expected = "x\\x1b[31mred\\x07\\u202eevil"
    assert expected in shown(render.call_result, {"content": [{"type": "text", "text": evil}]})
    assert expected in shown(render.tools_table, {"tools": [{"name": "t", "description": evil}]})
    assert expected in shown(render.resources_table, {"resources": [{"uri": "u", "name": evil}]})
    assert expected in shown(render.prompts_table, {"prompts": [{"name": "p", "description": evil}]})
    assert expected in shown(render.completion_values, {"completion": {"values": [evil]}})
    assert expected in shown(render.server_info, {"serverInfo": {"name": evil}, "instructions": evil})
    assert expected in shown(render.prompt_messages, {"messages": [{"role": evil, "content": {
        "type": "text", "text": "hi"}}]})
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"
    assert printable("a\nb", keep_newlines=False) == "a b"


@pytest.mark.parametrize("ch", ["\x9b", "\u202e", "\u2067", "\u200b", "\u2028", "\u2029", "\ufeff", "\x85"])
def test_invisible_and_bidi_characters_are_escaped_in_human_output(ch: str) -> None:
    evil = f"a{ch}b"
    code = ord(ch)
    expected = f"a\\x{code:02x}b" if code < 0x100 else f"a\\u{code:04x}b"
    for text in (
        shown(render.call_result, {"content": [{"type": "text", "text": evil}]}),
        shown(render.server_info, {"serverInfo": {"name": evil}, "instructions": evil}),
    ):
        assert ch not in text and expected in text
    # A table shows a description's first line (U+2028 and U+2029 end one), never the raw character.
    assert ch not in shown(render.tools_table, {"tools": [{"name": "t", "description": evil}]})
    # JSON shown to a person (unknown blocks, schemas) spells them as JSON escapes.
    for text in (
        shown(render.call_result, {"content": [{"type": "future", "x": evil}]}),
        shown(render.tool_detail, {"name": "t", "inputSchema": {"type": "object", "description": evil}}),
    ):
        assert ch not in text and f"a\\u{code:04x}b" in text


def test_lists_and_details() -> None:
    text = shown(render.resources_table, {"resources": [
        {"uri": "file:///x", "name": "x", "mimeType": "text/plain", "size": 2048, "description": "X\nmore"}]})
    assert "URI" in text and "file:///x" in text and "text/plain 2.0 KiB" in text and "more" not in text
    text = shown(render.templates_table, {"resourceTemplates": [{"uriTemplate": "file:///{p}", "name": "f"}]})
    assert "file:///{p}" in text
    text = shown(render.prompts_table, {"prompts": [{"name": "review", "arguments": [
        {"name": "code", "required": True}, {"name": "style"}]}]})
    assert "review(code, style?)" in text
    assert "(no tools)" in shown(render.tools_table, {"tools": []})
    assert "(no resources)" in shown(render.resources_table, {"resources": []})
    assert "(no prompts)" in shown(render.prompts_table, {"prompts": []})


@pytest.mark.parametrize("odd", [5, True, "abc", {"a": 1}, [[1]], [{"a": []}], None])
def test_server_data_of_the_wrong_shape_renders_as_far_as_it_goes(odd: Any) -> None:
    """A server's lists hold what it likes: a field of the wrong type is skipped or shown as
    JSON, never an exception (a number as a prompt's arguments, a list in a schema's
    `required` or as a tool's name once were)."""
    assert "p(" in shown(render.prompts_table, {"prompts": [{"name": "p", "arguments": odd}]})
    assert "p(" in shown(render.prompt_detail, {"name": "p", "arguments": odd})
    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {"a": {}}, "required": odd}}
    assert "t(a?)" in shown(render.tools_table, {"tools": [tool]})
    assert "t(a?: " in shown(render.tool_detail, tool)
    named = json.dumps(odd, ensure_ascii=False) if not isinstance(odd, str) else odd
    assert f"{named}()" in shown(render.tools_table, {"tools": [{"name": odd}]})
    for result in ({"content": odd}, {"contents": odd}, {"messages": odd}):
        shown(render.call_result, result)
        shown(render.resource_contents, result)
        shown(render.prompt_messages, result)
    assert "(no suggestions)" in shown(render.completion_values, {"completion": {"values": odd}})


def test_a_prompt_and_an_unknown_tool_read_only_the_names_given_as_text() -> None:
    from mcpcli.args import UnknownTool, prompt_schema

    assert prompt_schema({"name": "p", "arguments": 5})["properties"] == {}
    listing = {"tools": [{"name": 5}, {"name": [["tool"]]}, {"name": None}, {"name": "tool"}]}
    assert UnknownTool("tol", listing).hint == "did you mean tool?"


def test_resource_contents_and_completion_values() -> None:
    text = shown(render.resource_contents, {"contents": [
        {"uri": "a://1", "text": "hello", "mimeType": "text/plain"},
        {"uri": "a://2", "blob": PNG, "mimeType": "image/png"}]})
    assert "[a://1 text/plain]\nhello" in text and "[blob image/png, 32 B]" in text
    text = shown(render.completion_values, {"completion": {"values": ["a", "b"], "total": 5}})
    assert text == "a\nb\n(3 more)\n"
    assert "(no suggestions)" in shown(render.completion_values, {"completion": {"values": []}})


def test_server_info_lines() -> None:
    text = shown(render.server_info, {
        "serverInfo": {"name": "srv", "version": "1.2", "title": "The Server"},
        "protocolVersion": "2026-07-28", "era": "modern", "transport": "stdio",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": True}, "logging": {}}, "instructions": "Be nice."})
    assert text.splitlines()[0] == "srv 1.2 — The Server"
    assert "protocol      2026-07-28 (modern era)" in text
    assert "capabilities  tools (listChanged), logging" in text
    assert "instructions:\nBe nice." in text


def test_saved_files_never_escape_the_directory_or_overwrite(tmp_path: Path) -> None:
    result = {"contents": [{"uri": "x://../../etc/passwd", "blob": PNG, "mimeType": "image/png"},
                           {"uri": "x://../../etc/passwd", "blob": PNG, "mimeType": "image/png"}]}
    paths = render.save_blobs(result, str(tmp_path / "d"))
    assert [p.parent for p in paths] == [tmp_path / "d", tmp_path / "d"]
    assert [p.name for p in paths] == ["passwd.png", "passwd-1.png"]


# -- output modes ---------------------------------------------------------------------------


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def app(tty: bool = False) -> App:
    return App(stdout=FakeTTY() if tty else io.StringIO(), stderr=io.StringIO(), stdin=io.StringIO())


def output(a: App, **flags: Any) -> Output:
    """The output the --json/--jsonl/--jq/--raw flags give on `a`'s stdout."""
    return Output.for_stream(a.stdout, tty=a.stdout_tty, **flags)


def test_json_is_the_default_off_a_terminal_and_human_on_one() -> None:
    assert output(app()).mode == "json"
    assert output(app(tty=True)).mode == "human"
    assert output(app(tty=True), as_json=True).mode == "json"
    assert output(app(tty=True), jq_filter=".").mode == "json"


def test_jsonl_spreads_list_items_and_jq_filters() -> None:
    a = app()
    output(a, jsonl=True).emit({"tools": [{"name": "a"}, {"name": "b"}]}, items="tools")
    assert a.stdout.getvalue() == '{"name":"a"}\n{"name":"b"}\n'  # type: ignore[attr-defined]
    a = app()
    output(a, jq_filter=".tools[].name", raw=True).emit({"tools": [{"name": "a"}, {"name": "b"}]})
    assert a.stdout.getvalue() == "a\nb\n"  # type: ignore[attr-defined]
    a = app()
    output(a).emit({"text": "é"})
    assert json.loads(a.stdout.getvalue()) == {"text": "é"}  # type: ignore[attr-defined]


#: What a terminal would act on: bidi override and isolate, ESC, a C1 control (NEL), DEL,
#: U+2028, a zero-width space, a tag character (beyond the BMP).
EVIL = "a\u202eb\u2066c\x1b[2Jd\x85e\x7ff\u2028g\u200bh\U000e0041i"
RAW_CHARS = ("\u202e", "\u2066", "\x1b", "\x85", "\x7f", "\u2028", "\u200b", "\U000e0041")


def test_json_on_a_terminal_escapes_what_a_terminal_would_act_on() -> None:
    """A person reads JSON shown on a terminal: those characters are `\\u` escapes there (the
    same JSON value); piped JSON stays byte for byte what the server sent."""
    value = {"tools": [{"name": "t", "description": EVIL}]}
    for flags in ({"as_json": True}, {"jsonl": True}, {"jq_filter": ".tools[0]"}):
        a = app(tty=True)
        output(a, **flags).emit(value, items="tools")
        text = a.stdout.getvalue()  # type: ignore[attr-defined]
        assert not any(c in text for c in RAW_CHARS), (flags, text)
        assert "\\u202e" in text and "\\u001b[2J" in text and "\\udb40\\udc41" in text
        assert json.loads(text) in (value, value["tools"][0]), flags  # the same value
        piped = app()
        output(piped, **flags).emit(value, items="tools")
        assert json.dumps(EVIL, ensure_ascii=False) in piped.stdout.getvalue(), flags  # type: ignore[attr-defined]
    a = app(tty=True)
    output(a, as_json=True).event({"description": EVIL})  # a stream's events (subscribe)
    assert json.loads(a.stdout.getvalue()) == {"description": EVIL}  # type: ignore[attr-defined]
    assert "\u202e" not in a.stdout.getvalue()  # type: ignore[attr-defined]


def test_raw_strings_on_a_terminal_are_shown_as_text_is() -> None:
    a = app(tty=True)
    output(a, jq_filter=".d", raw=True).emit({"d": EVIL + "\nline two\tcell"})
    assert a.stdout.getvalue() == printable(EVIL + "\nline two\tcell") + "\n"  # type: ignore[attr-defined]
    piped = app()
    output(piped, jq_filter=".d", raw=True).emit({"d": EVIL})
    assert piped.stdout.getvalue() == EVIL + "\n"  # type: ignore[attr-defined]


def test_a_spilled_result_is_exact_and_a_shown_one_escaped_on_a_terminal(tmp_path: Path) -> None:
    big = {"description": EVIL * 10}
    a = app(tty=True)
    out = output(a, as_json=True)
    out.spill_dir, out.max_chars = str(tmp_path), 100
    out.emit(big)
    pointer = json.loads(a.stdout.getvalue())  # type: ignore[attr-defined]
    assert json.loads(Path(pointer["spilled"]).read_text()) == big
    assert json.dumps(EVIL, ensure_ascii=False)[1:-1] in Path(pointer["spilled"]).read_text()  # data: exact
    a = app(tty=True)
    out = output(a, as_json=True)
    out.spill_dir = str(tmp_path / "unused")
    out.emit({"description": EVIL})  # short: printed, not spilled
    text = a.stdout.getvalue()  # type: ignore[attr-defined]
    assert json.loads(text) == {"description": EVIL} and not any(c in text for c in RAW_CHARS)
    assert not (tmp_path / "unused").exists()
    (tmp_path / "blocker").write_text("")
    a = app(tty=True)
    out = output(a, as_json=True)
    out.spill_dir, out.max_chars, out.warn = str(tmp_path / "blocker" / "sub"), 100, lambda note: None
    out.emit(big)  # the spill fails: printed after all, escaped
    text = a.stdout.getvalue()  # type: ignore[attr-defined]
    assert json.loads(text) == big and not any(c in text for c in RAW_CHARS)


def test_bad_output_flags_are_usage_errors() -> None:
    with pytest.raises(UsageError):
        output(app(), as_json=True, jsonl=True)
    with pytest.raises(UsageError):
        output(app(), raw=True)
    with pytest.raises(UsageError, match="--jq"):
        output(app(), jq_filter=".[")
    with pytest.raises(UsageError, match="--jq"):
        output(app(), jq_filter=".a.b").emit({"a": 1})


def test_compact_json_on_a_terminal_as_jq_c() -> None:
    """JSON is indented on a terminal; --compact (-c) keeps each value on one line there
    too, and alone it asks for JSON (as --json does)."""
    listing = {"tools": [{"name": "a"}, {"name": "b"}]}
    a = app(tty=True)
    output(a, jq_filter=".tools[]").emit(listing)
    assert a.stdout.getvalue() == '{\n  "name": "a"\n}\n{\n  "name": "b"\n}\n'  # type: ignore[attr-defined]
    a = app(tty=True)
    output(a, jq_filter=".tools[]", compact=True).emit(listing)
    assert a.stdout.getvalue() == '{"name":"a"}\n{"name":"b"}\n'  # type: ignore[attr-defined]
    a = app(tty=True)
    out = output(a, compact=True)
    assert out.mode == "json"
    out.emit(listing)
    assert a.stdout.getvalue() == '{"tools":[{"name":"a"},{"name":"b"}]}\n'  # type: ignore[attr-defined]


# -- the progress bar -------------------------------------------------------------------------


def _task_bar() -> tuple[Any, Any]:
    """A progress bar on a (fake) terminal, and the status callback `tools call` gives a task."""
    from mcpcli.cli._progress import ProgressBar
    from mcpcli.cli._task_follow import task_options

    bar = ProgressBar(App(stdout=io.StringIO(), stderr=FakeTTY(), stdin=io.StringIO()))
    return bar, task_options(bar).on_status


def _status(on_status: Any, status: str, message: str | None = None) -> None:
    from mcpcli.client.tasks import Task

    on_status(Task.from_wire({"taskId": "t1", "status": status, **({"statusMessage": message} if message else {})}))


def test_a_task_status_message_replaces_an_older_progress_counter() -> None:
    """A 2026-07-28 task: the call's progress before it became a task ("step 1", 1 of 4),
    then only `tasks/get` status messages. The bar shows one message and no stale counter
    (it showed "2/4: step 2 · step 1" at 25%)."""
    bar, on_status = _task_bar()
    try:
        bar({"progressToken": 1, "progress": 1, "total": 4, "message": "step 1"})
        assert bar.shown() == ("step 1", 1, 4)
        _status(on_status, "working")
        assert bar.shown() == ("task working: step 1", 1, 4)
        _status(on_status, "working", "2/4: step 2")
        assert bar.shown() == ("task working: 2/4: step 2", 0, None)
        _status(on_status, "input_required", "needs an answer")
        assert bar.shown() == ("task input_required: needs an answer", 0, None)
    finally:
        bar.close()


def test_progress_notifications_during_a_task_stay_the_source() -> None:
    """A 2025-11-25 task whose progress notifications keep coming: the status messages
    polled beside them (less precise) do not make the bar jump between the two."""
    bar, on_status = _task_bar()
    try:
        _status(on_status, "working")
        assert bar.shown() == ("task working", 0, None)
        bar({"progressToken": 1, "progress": 1, "total": 4, "message": "step 1"})
        assert bar.shown() == ("task working: step 1", 1, 4)
        _status(on_status, "working", "1/4: step 1")
        assert bar.shown() == ("task working: step 1", 1, 4)
        bar({"progressToken": 1, "progress": 2, "total": 4, "message": "step 2"})
        assert bar.shown() == ("task working: step 2", 2, 4)
    finally:
        bar.close()
