"""`mcp snapshot` and `mcp diff` on the fixture server and its broken next release.

v1.yaml and v2.yaml (served in-process by our own runtime) are two releases of one server;
v2 breaks its clients in every way `mcp diff` classifies.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in

HERE = Path(__file__).resolve().parent
V1, V2 = str(HERE / "v1.yaml"), str(HERE / "v2.yaml")

#: Every change from v1 to v2, as `mcp diff --json` lists them.
V1_TO_V2 = [
    (False, "tool-added", "tool added"),
    (True, "param-type-narrowed", "tool convert param amount"),
    (False, "param-added", "tool convert param precision"),
    (True, "param-enum-value-removed", "tool convert param unit"),
    (True, "output-field-removed", "tool convert output note"),
    (False, "tool-description-changed", "tool greet"),
    (True, "param-required-added", "tool greet param title"),
    (True, "tool-removed", "tool legacy"),
    (True, "template-removed", "template fixture://items/{id}"),
    (True, "prompt-removed", "prompt review"),
]


def changes(stdout: str) -> list[tuple[bool, str, str]]:
    return [(c["breaking"], c["kind"], c["subject"]) for c in json.loads(stdout)["changes"]]


# -- mcp snapshot -----------------------------------------------------------------------------------


def test_snapshot_is_canonical_and_stable(tmp_path: Path) -> None:
    first = mcp_in("snapshot", V1)
    assert first.code == 0, first
    assert mcp_in("snapshot", V1).stdout == first.stdout
    surface = json.loads(first.stdout)
    assert first.stdout == json.dumps(surface, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert surface["mcpSnapshot"] == 1
    assert surface["serverInfo"] == {"name": "authors-fixture", "version": "1.0.0"}
    assert [t["name"] for t in surface["tools"]] == ["broken", "convert", "greet", "legacy"]
    assert [t["uriTemplate"] for t in surface["resourceTemplates"]] == ["fixture://items/{id}"]
    assert [p["name"] for p in surface["prompts"]] == ["review"]
    out = tmp_path / "surface.json"
    r = mcp_in("snapshot", V1, "-o", str(out))
    assert (r.code, r.stdout) == (0, "")
    assert r.stderr == f"mcp: wrote {out} (4 tools, 1 resources, 1 templates, 1 prompts)\n"
    assert out.read_text() == first.stdout
    assert mcp_in("snapshot", V1, "--jq", ".tools[].name", "-r").stdout == "broken\nconvert\ngreet\nlegacy\n"
    compact = mcp_in("snapshot", V1, "-c").stdout
    assert len(compact.splitlines()) == 1 and json.loads(compact) == surface


def test_snapshot_output_replaces_a_symlink_instead_of_following_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    link = tmp_path / "surface.json"
    link.symlink_to(victim)
    assert mcp_in("snapshot", V1, "-o", str(link)).code == 0
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and json.loads(link.read_text())["mcpSnapshot"] == 1
    r = mcp_in("snapshot", V1, "-o", str(tmp_path / "missing" / "s.json"))
    assert r.code == 2
    assert r.stderr == f"mcp: error: --output {tmp_path}/missing/s.json: No such file or directory\n"


# -- mcp diff ----------------------------------------------------------------------------------------


def test_diff_classifies_every_change_of_the_broken_release() -> None:
    r = mcp_in("diff", V1, V2, "--json")
    assert r.code == 1, r
    assert changes(r.stdout) == V1_TO_V2
    report = json.loads(r.stdout)
    assert report["old"] == {"source": V1, "serverInfo": {"name": "authors-fixture", "version": "1.0.0"},
                             "protocolVersion": "2026-07-28"}
    assert report["new"]["serverInfo"]["version"] == "2.0.0"
    assert all(set(c) == {"breaking", "kind", "subject", "detail"} for c in report["changes"])
    lines = mcp_in("diff", V1, V2, "--jsonl").stdout.splitlines()
    assert [json.loads(line)["kind"] for line in lines] == [kind for _, kind, _ in V1_TO_V2]


def test_diff_for_people_groups_breaking_changes_first() -> None:
    r = mcp_in("diff", V1, V2)
    assert r.code == 1
    assert r.stdout.splitlines() == [
        f"old: {V1} (authors-fixture 1.0.0, protocol 2026-07-28)",
        f"new: {V2} (authors-fixture 2.0.0, protocol 2026-07-28)",
        "breaking (7):",
        "  tool convert param amount: type number → integer [param-type-narrowed]",
        '  tool convert param unit: values removed: "cm" [param-enum-value-removed]',
        "  tool convert output note: removed [output-field-removed]",
        "  tool greet param title: new required parameter (string) [param-required-added]",
        "  tool legacy: removed [tool-removed]",
        "  template fixture://items/{id}: removed [template-removed]",
        "  prompt review: removed [prompt-removed]",
        "not breaking (3):",
        "  tool added: added [tool-added]",
        "  tool convert param precision: new optional parameter [param-added]",
        "  tool greet: description changed [tool-description-changed]",
        "7 breaking, 3 not breaking",
    ]
    back = mcp_in("diff", V2, V1)
    assert back.code == 1 and "tool added: removed [tool-removed]" in back.stdout


def test_diff_reads_snapshot_files_and_targets_alike(tmp_path: Path) -> None:
    snap = tmp_path / "v1.json"
    assert mcp_in("snapshot", V1, "-o", str(snap)).code == 0
    same = mcp_in("diff", str(snap), V1)
    assert same.code == 0, same
    assert same.stdout.splitlines()[-1] == "no changes"
    assert changes(mcp_in("diff", str(snap), V2, "--json").stdout) == V1_TO_V2
    assert changes(mcp_in("diff", "-", V2, "--json", input=snap.read_text()).stdout) == V1_TO_V2
    # a new version alone is information, not a change
    released = json.loads(snap.read_text())
    released["serverInfo"]["version"] = "1.0.1"
    (tmp_path / "v101.json").write_text(json.dumps(released))
    r = mcp_in("diff", str(snap), str(tmp_path / "v101.json"))
    assert r.code == 0
    assert r.stdout.splitlines() == [
        f"old: {snap} (authors-fixture 1.0.0, protocol 2026-07-28)",
        f"new: {tmp_path}/v101.json (authors-fixture 1.0.1, protocol 2026-07-28)",
        "no changes",
    ]


@pytest.mark.parametrize(("args", "stdin", "error"), [
    (["diff", V1], "", "mcp: error: missing NEW: a snapshot file, a TARGET, or a server command after --"),
    (["diff", "-", "-"], "", "mcp: error: only one side can be read from stdin (-)"),
    (["diff", V1, V2, "--", "python", "s.py"], "", "mcp: error: give NEW or a server command after --, not both"),
    (["diff", "nothere.json", V1], "", "mcp: error: cannot read the snapshot nothere.json: No such file or directory"),
    (["diff", "-", V1], "{}", "mcp: error: stdin: not a snapshot (no 'mcpSnapshot' field)"),
    (["diff", str(HERE), V1], "", f"mcp: error: unknown server '{HERE}'"),
    (["diff", "/dev/null/x.json", V1], "", "mcp: error: cannot read the snapshot /dev/null/x.json: Not a directory"),
    (["diff", "nosuchserver", V1], "", "mcp: error: unknown server 'nosuchserver'"),
])
def test_diff_usage_errors(args: list[str], stdin: str, error: str) -> None:
    r = mcp_in(*args, input=stdin)
    assert r.code == 2, r
    assert r.stderr.splitlines()[0] == error
    assert r.stdout == ""


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "s.json"
    os.mkfifo(fifo)
    r = mcp_in("diff", str(fifo), V1, timeout=30)
    assert r.code == 2
    assert r.stderr == f"mcp: error: cannot read the snapshot {fifo}: not a regular file\n"


def test_different_protocol_versions_are_noted(tmp_path: Path) -> None:
    surface = json.loads(mcp_in("snapshot", V1).stdout)
    surface["protocolVersion"] = "2025-06-18"
    (tmp_path / "old.json").write_text(json.dumps(surface))
    r = mcp_in("diff", str(tmp_path / "old.json"), V1)
    assert r.code == 0
    assert r.stdout.splitlines()[2:] == [
        "note: the two speak different protocol versions; some differences (capabilities, list fields) "
        "may come from that alone",
        "no changes",
    ]


@pytest.mark.slow
def test_diff_against_a_server_command_reports_a_dropped_capability(tmp_path: Path) -> None:
    """The fake server with --features declares resources and prompts; without, neither."""
    snap = tmp_path / "before.json"
    r = mcp_in("snapshot", "-o", str(snap), "-q", "--", *fake_server("--features"))
    assert r.code == 0, r
    assert "mcp: warning: the server declares resources but does not list them" in r.stderr
    r = mcp_in("diff", str(snap), "--json", "-q", "--", *fake_server())
    assert r.code == 1, r
    assert changes(r.stdout) == [
        (True, "capability-removed", "capability prompts"),
        (True, "capability-removed", "capability resources"),
        (True, "prompt-removed", "prompt weather"),
    ]


def test_the_ci_commands_offer_the_same_capabilities_on_a_terminal() -> None:
    """snapshot, diff and test never prompt: a terminal must not change what the server sees."""
    import io

    from mcpcli.cli._app import App
    from mcpcli.cli._connection import Connection
    from mcpcli.cli._features import build_features

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    app = App(stdin=Terminal(), stdout=Terminal(), stderr=Terminal())
    assert build_features(app, Connection()).capabilities("legacy") == {"elicitation": {"form": {}, "url": {}}}
    assert build_features(app, Connection(interactive=False)).capabilities("legacy") == {"elicitation": {"form": {}}}
