"""Checking one answer against a test's assertions: every failing assertion, in words.

The answer is a result (a tool call's, a resource read's, a prompt's) or a
JSON-RPC error, which the assertions see as `{"code", "message", "data"}`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcpcli.surface import strip_volatile
from mcpcli.testfile.model import ABSENT, Expect

__all__ = ["Answer", "check", "snapshot_value", "texts"]

#: How much of a value a failure message shows.
SHOWN = 200


@dataclass(frozen=True)
class Answer:
    """What the server answered: a result, or a JSON-RPC error (code, message, data)."""

    action: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def value(self) -> Any:
        """What `text`, `jq`, `json` and `snapshot` look at."""
        return self.result if self.result is not None else self.error

    @property
    def tool_error(self) -> bool:
        return self.action == "call" and self.result is not None and self.result.get("isError") is True


def check(expect: Expect, answer: Answer, stored: Any = ABSENT) -> list[str]:
    """Every assertion of `expect` that `answer` fails, as one sentence each. `stored` is
    the test's stored snapshot (ABSENT: none) when it asks for one."""
    failures = _error(expect, answer)
    value = answer.value
    if expect.text is not None:
        found = texts(value) if answer.error is None else str(answer.error.get("message", ""))
        if expect.text.search(found) is None:
            failures.append(f"text {_show(expect.text.pattern)} not found in {_show(found)}"
                            if found else f"text {_show(expect.text.pattern)}: the answer has no text")
    if expect.jq is not None:
        failures.extend(_jq(expect.jq, value))
    if expect.json is not ABSENT:
        mismatch = contains(value, expect.json, "")
        if mismatch is not None:
            failures.append("json: " + mismatch)
    if expect.snapshot:
        if stored is ABSENT:
            failures.append("no stored snapshot for this test (run with --update to write it)")
        else:
            difference = first_difference(stored, snapshot_value(expect, answer), "")
            if difference is not None:
                failures.append("differs from its snapshot: " + difference +
                                " (run with --update to accept the new answer)")
    return failures


def _error(expect: Expect, answer: Answer) -> list[str]:
    rpc = answer.error
    if expect.error is False:
        if rpc is not None:
            return [f"the server answered with error {rpc.get('code')}: {_clip(str(rpc.get('message', '')))}"]
        if answer.tool_error:
            return [f"the tool reported an error (isError): {_clip(texts(answer.result))}"]
        return []
    if expect.error_rpc or not isinstance(expect.error, bool):
        if rpc is None:
            wanted = "a JSON-RPC error" if expect.error is True else f"JSON-RPC error {expect.error}"
            got = "a result with isError" if answer.tool_error else "a result"
            return [f"expected {wanted}, got {got}"]
        failures = []
        if not isinstance(expect.error, bool) and rpc.get("code") != expect.error:
            failures.append(f"expected error code {expect.error}, got {rpc.get('code')}: "
                            f"{_clip(str(rpc.get('message', '')))}")
        if expect.error_message is not None and expect.error_message.search(str(rpc.get("message", ""))) is None:
            failures.append(f"error message {_show(str(rpc.get('message', '')))} does not match "
                            f"{_show(expect.error_message.pattern)}")
        return failures
    if rpc is None and not answer.tool_error:
        return ["expected an error, got a result" + (" (tool calls fail with isError or a JSON-RPC error)"
                                                     if answer.action == "call" else "")]
    return []


def _jq(compiled: tuple[str, Any], value: Any) -> list[str]:
    from mcpcli.jqfilter import error_message as jq_message

    source, program = compiled
    try:
        outputs = list(program.input_value(value).all())
    except ValueError as exc:
        return [f"jq {_show(source)}: {jq_message(exc)}"]
    if outputs and all(item is True for item in outputs):
        return []
    if not outputs:
        return [f"jq {_show(source)} gave no value"]
    return [f"jq {_show(source)} gave {_clip(', '.join(_json(v) for v in outputs))}"]


def texts(value: Any) -> str:
    """The text of an answer: every `text` string in it (content blocks, resource contents,
    prompt messages, embedded resources), in order, one per line."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                if key == "text" and isinstance(item, str):
                    found.append(item)
                else:
                    walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return "\n".join(found)


def contains(actual: Any, expected: Any, path: str) -> str | None:
    """Where `actual` does not contain `expected`, or None: mappings need the expected keys
    (others may be there), lists the same length with each item contained, and other
    values equality (1 and 1.0 are equal, true and 1 are not)."""
    where = path or "."
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"at {where}: expected an object, got {_clip(_json(actual))}"
        for key, item in expected.items():
            if key not in actual:
                return f"at {where}: no key {_json(key)}"
            mismatch = contains(actual[key], item, f"{path}.{key}" if _plain(key) else f"{path}[{_json(key)}]")
            if mismatch is not None:
                return mismatch
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"at {where}: expected a list, got {_clip(_json(actual))}"
        if len(actual) != len(expected):
            return f"at {where}: expected {len(expected)} items, got {len(actual)}"
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            mismatch = contains(a, e, f"{path}[{index}]")
            if mismatch is not None:
                return mismatch
        return None
    if not _same(actual, expected):
        return f"at {where}: expected {_clip(_json(expected))}, got {_clip(_json(actual))}"
    return None


def first_difference(old: Any, new: Any, path: str) -> str | None:
    """The first place two JSON values differ, in words; None when they are equal."""
    where = path or "."
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            sub = f"{path}.{key}" if _plain(key) else f"{path}[{_json(key)}]"
            if key not in new:
                return f"at {sub}: missing (was {_clip(_json(old[key]))})"
            if key not in old:
                return f"at {sub}: new {_clip(_json(new[key]))}"
            difference = first_difference(old[key], new[key], sub)
            if difference is not None:
                return difference
        return None
    if isinstance(old, list) and isinstance(new, list):
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            difference = first_difference(a, b, f"{path}[{index}]")
            if difference is not None:
                return difference
        if len(old) != len(new):
            return f"at {where}: {len(new)} items, was {len(old)}"
        return None
    if not _same(old, new):
        return f"at {where}: {_clip(_json(new))}, was {_clip(_json(old))}"
    return None


def snapshot_value(expect: Expect, answer: Answer) -> Any:
    """What is stored for a test's snapshot: the answer without what changes from one
    response to the next (the protocol's `_meta` keys, `resultType`, cache hints), and
    without the test's `ignore:` paths."""
    value = answer.value
    if isinstance(value, dict):
        value = strip_volatile(value)
    if expect.ignore is not None:
        value = expect.ignore[1].input_value(value).first()
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _plain(key: str) -> bool:
    return key.isidentifier()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _show(text: str) -> str:
    return _clip(json.dumps(text, ensure_ascii=False))


def _clip(text: str) -> str:
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."
