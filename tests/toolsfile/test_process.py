"""Process control: exit codes, signals, timeouts, grandchildren, output caps, concurrency, cancellation.

The autouse fixture in tests/conftest.py fails any test that leaves a process
behind, so every test here also proves that nothing outlives its call.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import wait_until_async

from mcpcli.toolsfile.watchdog import group_alive
from toolsfile.util import FakeContext, text_of

pytestmark = pytest.mark.anyio


def tool(name: str, script: str, extra: str = "", output: str = "") -> str:
    body = f"""
  - name: {name}
    description: test tool
    run:
      shell: sh
      script: |
{_indent(script, 8)}
{extra}"""
    if output:
        body += f"\n    output:\n{_indent(output, 6)}"
    return body


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.strip("\n").splitlines())


def doc(*tools: str, head: str = "") -> str:
    return "version: 1\n" + head + "tools:" + "".join(tools) + "\n"


async def test_exit_codes_and_stderr(make_backend: Any) -> None:
    backend = make_backend(doc(
        tool("fail", "echo out; echo 'something broke' >&2; exit 3"),
        tool("grep_like", "echo no match >&2; exit 1", "      ok_exit_codes: [0, 1]"),
        tool("big_exit", "exit 300"),
        tool("segv", "kill -SEGV $$"),
        tool("quiet_stderr", "echo fine; echo noise >&2", "", "stderr: always"),
    ))
    result = await backend.call_tool("fail", {}, FakeContext())
    assert result == {"isError": True, "content": [
        {"type": "text", "text": "out\n"},
        {"type": "text", "text": "stderr:\nsomething broke"},
        {"type": "text", "text": "exit code 3"},
    ]}
    result = await backend.call_tool("grep_like", {}, FakeContext())
    assert not result.get("isError")
    result = await backend.call_tool("big_exit", {}, FakeContext())
    assert text_of(result).endswith("exit code 44")
    result = await backend.call_tool("segv", {}, FakeContext())
    assert result.get("isError")
    assert "terminated by SIGSEGV" in text_of(result)
    result = await backend.call_tool("quiet_stderr", {}, FakeContext())
    assert text_of(result) == "fine\n\nstderr:\nnoise"


@pytest.mark.slow
async def test_timeout_kills_the_whole_group_including_grandchildren(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend(doc(
        tool("hang", "echo started; sleep 100 & sleep 100 & wait", "      timeout: 0.5s\n      kill_grace: 0.5s"),
        tool("stubborn", "trap '' TERM; echo ignoring; sleep 100 & wait; sleep 100",
             "      timeout: 0.3s\n      kill_grace: 0.3s"),
    ))
    started = time.monotonic()
    result = await backend.call_tool("hang", {}, FakeContext())
    assert time.monotonic() - started < 5
    assert result["isError"] is True
    assert text_of(result) == "started\n\ntimed out after 0.5s (process group killed)"
    started = time.monotonic()
    result = await backend.call_tool("stubborn", {}, FakeContext())
    assert time.monotonic() - started < 5
    assert "timed out after 0.3s" in text_of(result)


async def test_background_leftovers_are_stopped_when_the_tool_exits(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend(doc(
        tool("leaves_child", "sleep 100 &\necho $! > bg.pid\necho done"),
        tool("detached_output", "(sleep 100 > /dev/null 2>&1 &)\necho done"),
    ))
    started = time.monotonic()
    result = await backend.call_tool("leaves_child", {}, FakeContext())
    assert text_of(result) == "done\n"
    assert time.monotonic() - started < 5
    pid = int((tmp_path / "bg.pid").read_text())
    await wait_until_async(lambda: not _running(pid), what="the process to end")
    result = await backend.call_tool("detached_output", {}, FakeContext())
    assert text_of(result) == "done\n"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


async def test_output_caps_keep_the_head_and_say_what_was_dropped(make_backend: Any) -> None:
    backend = make_backend(doc(
        tool("flood", "head -c 5000000 /dev/zero | tr '\\0' 'a'; head -c 3000000 /dev/zero | tr '\\0' 'e' >&2; exit 1",
             "", "max_bytes: 1KiB"),
        tool("stderr_flood", "head -c 2000000 /dev/zero >&2; echo ok", "", "max_bytes: 1KiB"),
        tool("runaway", "yes", "      timeout: 20s", "max_bytes: 64KiB\non_overflow: kill"),
    ))
    result = await backend.call_tool("flood", {}, FakeContext())
    out, err, status = (b["text"] for b in result["content"])
    assert out.startswith("a" * 1024 + "\n[... 4.8MiB truncated; output.max_bytes=1KiB]")
    assert err.startswith("stderr:\n" + "e" * 1024)
    assert "2.9MiB truncated" in err
    assert status == "exit code 1"
    # A child that fills stderr while stdout is quiet does not deadlock.
    result = await backend.call_tool("stderr_flood", {}, FakeContext())
    assert text_of(result) == "ok\n"
    started = time.monotonic()
    result = await backend.call_tool("runaway", {}, FakeContext())
    assert time.monotonic() - started < 10
    assert "output exceeded output.max_bytes" in text_of(result)


async def test_binary_output_in_text_mode(make_backend: Any) -> None:
    backend = make_backend(doc(tool("bin", "printf 'PNG\\000\\001\\377'")))
    result = await backend.call_tool("bin", {}, FakeContext())
    note, blob = result["content"]
    assert "binary" in note["text"]
    assert blob["resource"]["mimeType"] == "application/octet-stream"
    import base64

    assert base64.b64decode(blob["resource"]["blob"]) == b"PNG\x00\x01\xff"


async def test_spawn_failures_are_clear(make_backend: Any, tmp_path: Path) -> None:
    (tmp_path / "noexec.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "noshebang").write_text("echo hi\n")
    (tmp_path / "noshebang").chmod(0o755)
    backend = make_backend("""
    version: 1
    tools:
      - {name: missing, description: x, run: {argv: [no-such-program-xyz]}}
      - {name: noexec, description: x, run: {argv: [./noexec.sh]}}
      - {name: noshebang, description: x, run: {argv: [./noshebang]}}
      - {name: nocwd, description: x, run: {argv: [echo], cwd: gone}}
    """)
    expected = {
        "missing": "not found on PATH",
        "noexec": "permission denied",
        "noshebang": "not an executable format",
        "nocwd": "working directory",
    }
    for name, fragment in expected.items():
        result = await backend.call_tool(name, {}, FakeContext())
        assert result.get("isError"), name
        assert fragment in text_of(result), (name, result)


@pytest.mark.slow
async def test_per_tool_concurrency_serializes(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend(doc(
        tool("serial", "mkdir lock || { echo overlap; exit 9; }\nsleep 0.2\nrmdir lock\necho ok",
             "      concurrency: 1"),
    ))
    results: list[dict[str, Any]] = []

    async def one() -> None:
        results.append(await backend.call_tool("serial", {}, FakeContext()))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
    assert [text_of(r) for r in results] == ["ok\n"] * 3


async def test_global_limit_and_queue_timeout(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend(doc(
        tool("blocker", "echo $$ > started\nn=0\nwhile [ ! -e release ] && [ $n -lt 500 ]; do sleep 0.02; n=$((n+1)); done\necho released"),
        tool("other", "echo ran"),
        head="limits: {max_concurrent: 1, queue_timeout: 0.3s}\n",
    ))
    results: dict[str, Any] = {}

    async def blocker() -> None:
        results["blocker"] = await backend.call_tool("blocker", {}, FakeContext())

    async with anyio.create_task_group() as tg:
        tg.start_soon(blocker)
        await wait_until_async(lambda: (tmp_path / "started").exists())
        busy = await backend.call_tool("other", {}, FakeContext())
        assert busy.get("isError")
        assert "server busy" in text_of(busy)
        (tmp_path / "release").write_text("")
    assert text_of(results["blocker"]) == "released\n"
    assert text_of(await backend.call_tool("other", {}, FakeContext())) == "ran\n"


async def test_many_parallel_calls_stay_isolated(make_backend: Any) -> None:
    backend = make_backend("""
    version: 1
    limits: {max_concurrent: 8}
    tools:
      - name: echo
        description: echo
        params: {v: {type: string}}
        run: {argv: [printf, "%s", "{{ v }}"]}
    """)
    results: dict[int, Any] = {}

    async def one(i: int) -> None:
        results[i] = await backend.call_tool("echo", {"v": f"value-{i}"}, FakeContext())

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(one, i)
    assert all(text_of(results[i]) == f"value-{i}" for i in range(40))


async def test_cancellation_kills_the_group(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend(doc(tool("slow", "echo $$ > pgid\nsleep 100 & sleep 100 & wait", "      kill_grace: 0.5s")))
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(backend.call_tool, "slow", {}, FakeContext())
            await wait_until_async(lambda: (tmp_path / "pgid").exists() and (tmp_path / "pgid").read_text().strip())
            pgid = int((tmp_path / "pgid").read_text())
            assert group_alive(pgid)
            scope.cancel()
    started = time.monotonic()
    await wait_until_async(lambda: not group_alive(pgid), timeout=3)
    assert time.monotonic() - started < 2


async def test_a_stop_cut_short_by_a_foreign_cancellation_still_kills_the_group(
    make_backend: Any, tmp_path: Path
) -> None:
    """A call whose task is cancelled from outside anyio (uvicorn's shutdown timeout, the
    event loop closing) during its stop sequence: no shield holds that off, so the long
    grace is cut and the group killed at once, not let go of while it ignores SIGTERM."""
    import asyncio

    backend = make_backend(doc(tool(
        "stubborn", "echo $$ > pgid\ntrap 'echo term > got_term' TERM\nwhile :; do sleep 1; done",
        "      kill_grace: 60s")))
    task = asyncio.get_running_loop().create_task(backend.call_tool("stubborn", {}, FakeContext()))
    await wait_until_async(lambda: (tmp_path / "pgid").exists() and (tmp_path / "pgid").read_text().strip())
    pgid = int((tmp_path / "pgid").read_text())
    task.cancel()  # the call's own cancellation: the stop sequence begins (SIGTERM, ignored)
    await wait_until_async(lambda: (tmp_path / "got_term").exists(), what="the SIGTERM")
    assert group_alive(pgid)  # within its grace
    task.cancel()  # and one no shield holds off
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until_async(lambda: not group_alive(pgid), timeout=3, what="the group to be killed")


async def test_slot_is_released_after_cancellation(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend(doc(
        tool("one_at_a_time", "touch running\nsleep 100", "      concurrency: 1\n      kill_grace: 0.2s"),
        head="limits: {queue_timeout: 5s}\n",
    ))
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(backend.call_tool, "one_at_a_time", {}, FakeContext())
            await wait_until_async(lambda: (tmp_path / "running").exists())
            scope.cancel()
    (tmp_path / "running").unlink()
    with anyio.move_on_after(10) as guard:
        async with anyio.create_task_group() as tg:
            tg.start_soon(backend.call_tool, "one_at_a_time", {}, FakeContext())
            await wait_until_async(lambda: (tmp_path / "running").exists())
            tg.cancel_scope.cancel()
    assert not guard.cancelled_caught


@pytest.mark.parametrize("budget", [0.0, 60.0])
async def test_process_starts_take_turns_with_the_event_loop(monkeypatch: pytest.MonkeyPatch, budget: float) -> None:
    """Calls released at once start their processes in turns: once a turn of the event loop
    has spent its budget on starts (here none at all), what else is ready (a ping read
    meanwhile) runs before the next start; starts within the budget wait for nothing. And a
    start, once made, reaches its caller even if the call is cancelled meanwhile."""
    import mcpcli.toolsfile.process
    from mcpcli.toolsfile.process import Starts

    monkeypatch.setattr(mcpcli.toolsfile.process, "TURN_BUDGET", budget)
    starts = Starts()
    order: list[str] = []

    async def start(name: str) -> None:
        await starts.take(lambda: order.append(name))

    async def ticker() -> None:  # one tick per turn of the event loop
        while sum(1 for what in order if what.startswith("start")) < 3:
            order.append("tick")
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        for n in range(3):
            tg.start_soon(start, f"start{n}")
        tg.start_soon(ticker)
    at = [i for i, what in enumerate(order) if what.startswith("start")]
    assert [order[i] for i in at] == ["start0", "start1", "start2"]
    if budget:
        assert at == [0, 1, 2], order  # all in the turn they were ready in
    else:
        assert all(later - earlier > 1 for earlier, later in itertools.pairwise(at)), order  # a turn between

    got: list[str] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        got.append(await Starts().take(lambda: "started"))  # not lost to the cancellation
        await anyio.lowlevel.checkpoint()
        pytest.fail("the cancellation should have come at the next checkpoint")
    assert got == ["started"]
