"""Large results: `--max-chars N` cuts human output with a marker; `--spill DIR` (or
MCP_SPILL_DIR) writes a long result to a file and prints a one-line pointer instead."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in

from mcpcli import render
from mcpcli.output import SPILL_THRESHOLD, Output

BIG = {"content": [{"type": "text", "text": "line\n" * 2000}]}


def _human(**limits: object) -> tuple[Output, io.StringIO]:
    stdout = io.StringIO()
    return Output(mode="human", stdout=stdout, **limits), stdout  # type: ignore[arg-type]


def test_max_chars_cuts_human_output_and_says_how_much_and_how_to_see_it() -> None:
    out, stdout = _human(max_chars=100)
    out.emit(BIG, human=render.call_result)
    text = stdout.getvalue()
    shown, marker = text.rsplit("\n… ", 1)
    assert shown == ("line\n" * 20).rstrip("\n")
    total = len("line\n" * 2000) + 1  # the renderer's final newline
    assert marker == (f"[cut {total - 100:,} of {total:,} characters (--max-chars 100); "
                      "see it all with --max-chars 0, --json, or --spill DIR]\n")


def test_short_human_output_is_untouched() -> None:
    out, stdout = _human(max_chars=100)
    out.emit({"content": [{"type": "text", "text": "hi"}]}, human=render.call_result)
    assert stdout.getvalue() == "hi\n"


def test_human_output_spills_to_a_file_with_a_pointer(tmp_path: Path) -> None:
    out, stdout = _human(max_chars=100, spill_dir=str(tmp_path / "spill"))
    out.emit(BIG, human=render.call_result)
    (path,) = (tmp_path / "spill").iterdir()
    assert path.read_text() == "line\n" * 2000 + "\n"  # what the terminal would have shown
    size = len("line\n" * 2000) + 1
    assert stdout.getvalue() == f"[{size:,} bytes of text spilled to {path}]\n"
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_spill_that_cannot_be_written_prints_the_result_and_warns(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    notes: list[str] = []
    stdout = io.StringIO()
    out = Output(mode="json", stdout=stdout, max_chars=10, spill_dir=str(blocker / "sub"), warn=notes.append)
    out.emit(BIG)
    assert json.loads(stdout.getvalue()) == BIG  # nothing lost
    assert len(notes) == 1 and notes[0].startswith(f"--spill {blocker / 'sub'}: ")


def test_json_is_never_cut_without_spill() -> None:
    stdout = io.StringIO()
    Output(mode="json", stdout=stdout, max_chars=10).emit(BIG)
    assert json.loads(stdout.getvalue()) == BIG


def test_tools_call_spills_json_past_the_default_threshold(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    size = SPILL_THRESHOLD + 10
    r = mcp_in("tools", "call", "echo", "--arg", "message=x", "--spill", str(spill),
               "--", *fake_server("--huge", str(size)))
    assert r.code == 0, r
    (path,) = spill.iterdir()
    assert r.json == {"spilled": str(path), "bytes": path.stat().st_size, "type": "json"}
    assert json.loads(path.read_text())["content"][0]["text"] == "x" * size


def test_small_results_are_printed_even_when_spilling(tmp_path: Path) -> None:
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server(),
               env={"MCP_SPILL_DIR": str(tmp_path / "spill")})
    assert r.code == 0, r
    assert r.json["content"] == [{"type": "text", "text": "hi"}]
    assert not (tmp_path / "spill").exists()


def test_the_env_variable_spills_jq_raw_output_as_text(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    r = mcp_in("tools", "call", "echo", "--arg", "message=" + "y" * 50, "--max-chars", "20",
               "--jq", ".content[0].text", "--raw", "--", *fake_server(), env={"MCP_SPILL_DIR": str(spill)})
    assert r.code == 0, r
    (path,) = spill.iterdir()
    assert path.suffix == ".txt" and path.read_text() == "y" * 50 + "\n"
    assert r.json == {"spilled": str(path), "bytes": 51, "type": "text"}


def test_the_fast_path_leaves_spilling_to_the_normal_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from mcpcli.cli.fast import try_call

    monkeypatch.setenv("MCP_SPILL_DIR", str(tmp_path))
    assert try_call(["tools", "call", "@s", "echo", "--arg", "message=hi"]) is None


@pytest.mark.peer
def test_resources_read_and_prompts_get_spill_too(everything: list[str], tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    r = mcp_in("resources", "read", "demo://resource/static/document/architecture.md",
               "--max-chars", "50", "--spill", str(spill), "--", *everything)
    assert r.code == 0, r
    (path,) = spill.iterdir()
    assert r.json["spilled"] == str(path) and r.json["type"] == "json"
    assert json.loads(path.read_text())["contents"][0]["uri"].endswith("architecture.md")
    path.unlink()
    r = mcp_in("prompts", "get", "args-prompt", "--arg", "city=Paris", "--max-chars", "20",
               "--spill", str(spill), "--", *everything)
    assert r.code == 0, r
    (path,) = spill.iterdir()
    assert r.json == {"spilled": str(path), "bytes": path.stat().st_size, "type": "json"}
    assert "Paris" in path.read_text()


@pytest.mark.parametrize("flags", [("--spill", "/tmp/x"), ("--spill=/tmp/x",)])
def test_the_fast_path_parser_leaves_spill_to_click(flags: tuple[str, ...]) -> None:
    from mcpcli.cli.fast import _parse

    assert _parse(["@s", "echo", "--arg", "message=hi"]) is not None
    assert _parse(["@s", "echo", "--arg", "message=hi", *flags]) is None


@pytest.mark.parametrize("flags", [("--max-chars", "10"), ("--meta", "k=v")])
def test_the_fast_path_parser_keeps_max_chars_and_meta(flags: tuple[str, ...]) -> None:
    """--max-chars cuts human output only (the fast path prints JSON); the daemon reads --meta
    (tests/sessions/test_fast_path.py compares both paths' output)."""
    from mcpcli.cli.fast import _parse

    assert _parse(["@s", "echo", "--arg", "message=hi", *flags]) is not None
