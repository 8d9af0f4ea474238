"""scripts/conformance counts the harness's checks.json files more strictly than the
harness's own exit status: these pin how each kind of scenario is counted, on
checks.json files laid out the way the harness writes them (no harness, no Node)."""

from __future__ import annotations

import json
import sys
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers import REPO


def load_runner() -> ModuleType:
    path = REPO / "scripts" / "conformance"
    loader = SourceFileLoader("conformance_runner", str(path))
    spec = spec_from_loader("conformance_runner", loader)
    assert spec is not None
    module = module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    loader.exec_module(module)
    return module


runner = load_runner()
STAMP = "2026-11-23T20-30-14-347Z"


def check(status: str, ident: str = "c") -> dict[str, Any]:
    return {"id": ident, "name": ident, "status": status, "timestamp": "t"}


def write(run_dir: Path, scenario: str, checks: Any) -> None:
    where = run_dir / f"{scenario}-{STAMP}"
    where.mkdir(parents=True)
    text = checks if isinstance(checks, str) else json.dumps(checks)
    (where / "checks.json").write_text(text)


def verdicts(summary: Any) -> dict[str, str]:
    return {s.name: s.verdict for s in summary.scenarios}


def test_each_kind_of_scenario_gets_its_verdict(tmp_path: Path) -> None:
    write(tmp_path, "ok", [check("SUCCESS"), check("INFO")])
    write(tmp_path, "broken", [check("SUCCESS"), check("FAILURE", "sep-1-x")])
    write(tmp_path, "nothing-proved", [check("INFO")])
    write(tmp_path, "no-checks", [])
    write(tmp_path, "garbled", "{not json")
    write(tmp_path, "harness-skip", [check("SKIPPED")])
    write(tmp_path, "warned", [check("SUCCESS"), check("WARNING", "w")])
    summary = runner.summarize(tmp_path, "client", 0)
    assert verdicts(summary) == {
        "ok": "PASS", "broken": "FAIL", "nothing-proved": "FAIL", "no-checks": "FAIL",
        "garbled": "FAIL", "harness-skip": "SKIP", "warned": "FAIL",
    }
    # Failures fail the run even when the harness itself exited 0.
    assert not summary.ok
    assert summary.lines(tmp_path)[-1] == "conformance: 1 passed, 5 failed, 1 skipped by the harness"


def test_a_harness_skip_is_labelled_never_passed(tmp_path: Path) -> None:
    write(tmp_path, "server-tasks-status-notifications", [check("SKIPPED")])
    write(tmp_path, "server-tools-list", [check("SUCCESS")])
    summary = runner.summarize(tmp_path, "server", 0)
    lines = summary.lines(tmp_path)
    assert "SKIP tasks-status-notifications: skipped by the harness itself (it ran no checks)" in lines
    assert lines[-1] == "conformance: 1 passed, 0 failed, 1 skipped by the harness"
    assert summary.ok


def test_a_skipped_check_beside_a_failure_is_still_a_failure(tmp_path: Path) -> None:
    write(tmp_path, "mixed", [check("SKIPPED"), check("FAILURE", "f")])
    assert verdicts(runner.summarize(tmp_path, "server", 0)) == {"mixed": "FAIL"}


def test_warnings_fail_a_client_scenario_but_not_a_server_one(tmp_path: Path) -> None:
    write(tmp_path, "server-s", [check("SUCCESS"), check("WARNING", "w")])
    assert verdicts(runner.summarize(tmp_path, "server", 0)) == {"s": "PASS"}
    assert verdicts(runner.summarize(tmp_path, "client", 0)) == {"server-s": "FAIL"}


def test_a_single_scenario_run_with_a_non_zero_harness_exit_is_failed(tmp_path: Path) -> None:
    write(tmp_path, "sse-retry", [check("SUCCESS")])
    assert verdicts(runner.summarize(tmp_path, "client", 1, single=True)) == {"sse-retry": "FAIL"}
    assert verdicts(runner.summarize(tmp_path, "client", 0, single=True)) == {"sse-retry": "PASS"}


def test_a_non_zero_harness_exit_fails_a_suite_run(tmp_path: Path) -> None:
    write(tmp_path, "tools_call", [check("SUCCESS")])
    assert not runner.summarize(tmp_path, "client", 1).ok


def test_a_run_with_no_checks_json_at_all_fails(tmp_path: Path) -> None:
    summary = runner.summarize(tmp_path, "server", 0)
    assert not summary.ok
    assert summary.lines(tmp_path)[-1] == "conformance: 0 passed, 1 failed, 0 skipped by the harness"


def test_nested_scenario_names_and_failing_check_ids_are_reported(tmp_path: Path) -> None:
    write(tmp_path, "auth/metadata-default", [check("FAILURE", "prm-discovery")])
    lines = runner.summarize(tmp_path, "client", 1).lines(tmp_path)
    assert lines[0] == "FAIL auth/metadata-default: 0 passed, 1 failed  [prm-discovery]"


def test_baseline_entries_turn_failures_into_expected_ones(tmp_path: Path) -> None:
    write(tmp_path, "whole", [check("FAILURE", "a")])
    write(tmp_path, "per-check", [check("SUCCESS"), check("FAILURE", "a")])
    write(tmp_path, "other-check", [check("FAILURE", "b")])
    summary = runner.summarize(tmp_path, "client", 0, {"whole", "per-check:a", "other-check:a"})
    assert verdicts(summary) == {"whole": "XFAIL", "per-check": "XFAIL", "other-check": "FAIL"}


def test_expected_failures_files_are_read(tmp_path: Path) -> None:
    path = tmp_path / "expected.yml"
    path.write_text(
        "# a reason for the file\n"
        "server:\n"
        "  - tools-list        # why it fails\n"
        "  - \"server-stateless:sep-2575-x\"\n"
        "client: [initialize, 'sse-retry']\n"
    )
    assert runner.read_expected(path, "server") == {"tools-list", "server-stateless:sep-2575-x"}
    assert runner.read_expected(path, "client") == {"initialize", "sse-retry"}
    assert runner.read_expected(tmp_path / "missing.yml", "client") == set()


def test_an_expected_failures_file_it_cannot_read_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "expected.yml"
    path.write_text("server:\n  {nested: mapping}\n")
    with pytest.raises(ValueError, match="cannot read"):
        runner.read_expected(path, "server")


@pytest.mark.parametrize("path", sorted((REPO / "tests" / "conformance").glob("expected-*.yml")),
                         ids=lambda p: p.name)
def test_the_committed_expected_failures_files_are_readable(path: Path) -> None:
    side = "client" if "client" in path.name else "server"
    assert runner.read_expected(path, side) == set()  # every baseline is empty today


def test_both_harness_versions_are_pinned_in_peers_sh() -> None:
    pinned = runner.pins()
    assert pinned["CONFORMANCE_STABLE"] == "0.1.16"
    assert pinned["CONFORMANCE_ALPHA"] == "0.2.0-alpha.12"


def test_client_scenarios_are_read_from_the_harness_listing() -> None:
    listing = (
        "Server scenarios (test against a server):\n"
        "  - server-initialize [2025-06-18,2025-11-25]\n"
        "\n"
        "Client scenarios (test against a client):\n"
        "  - initialize [2025-06-18,2025-11-25]\n"
        "  - auth/metadata-default [2025-11-25]\n"
        "\n"
        "Other:\n"
        "  - not-a-client-scenario\n"
    )
    assert runner.parse_client_scenarios(listing) == ["initialize", "auth/metadata-default"]
