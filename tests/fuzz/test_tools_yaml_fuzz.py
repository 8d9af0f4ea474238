"""The tools.yaml loader (`mcpcli.toolsfile.load.parse_config`) against random and mutated files.

Property: any bytes either load into a `Config` or raise `ToolsFileError` (a
`ConfigError`) whose message starts `file:line:col:` (or `file:` when no
position applies), within the deadline; never another exception. Seeds are
the real files: examples/tools.yaml, the conformance server and `mcp serve
--init`'s example.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fuzz.strategies import json_values, mutated
from mcpcli.toolsfile.load import ToolsFileError, parse_config
from mcpcli.toolsfile.model import ToolsFile
from mcpcli.toolsfile.yamlstrict import YamlProblems
from mcpcli.toolsfile.yamlstrict import load as load_yaml

REPO = Path(__file__).resolve().parents[2]
SEEDS = [
    (REPO / name).read_bytes()
    for name in ("examples/tools.yaml", "tests/conformance/server.yaml", "mcpcli/toolsfile/example/tools.yaml")
]
FILE = "fuzz/tools.yaml"
#: A full load runs pure-Python YAML and JSON Schema checks: a smaller share of the budget.
FEWER = settings(max_examples=max(10, settings.default.max_examples // 3))

BILLION_LAUGHS = b"""version: 1
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
tools: *h
"""


def load(data: bytes | str) -> ToolsFile | None:
    """The config, or None after checking the documented error's shape."""
    try:
        return parse_config(data, FILE, environ={"HOME": "/nonexistent"})
    except ToolsFileError as exc:
        error = exc
    assert error.problems
    message = str(error)
    assert message.startswith(FILE + ":"), message
    for problem in error.problems:
        assert problem.file == FILE
        assert problem.line >= 0 and problem.col >= 0
        assert problem.message
        where = str(problem).split(": ", 1)[0]
        assert where == FILE or where.startswith(FILE + ":")
    return None


def test_seeds_load() -> None:
    for seed in SEEDS:
        assert isinstance(load(seed), ToolsFile)


@FEWER
@given(st.binary(max_size=300) | st.text(max_size=300))
@example("[" * 3000)  # RecursionError out of PyYAML's composer, after seconds of scanning
@example("- " * 3000 + "x")
@example("{a: " * 3000)
@example(b"\xef\xbb\xbfversion: 1\n\xff")
@example("version: 1\ntools:\n\t- name: x\n")
def test_random_documents(data: bytes | str) -> None:
    load(data)


@FEWER
@given(st.dictionaries(st.sampled_from(["version", "tools", "resources", "prompts", "server", "x"]),
                       json_values, max_size=4) | json_values)
def test_random_yaml_values(doc: Any) -> None:
    load(yaml.safe_dump(doc, allow_unicode=True))
    load(json.dumps(doc))  # JSON is YAML too


@st.composite
def line_edits(draw: st.DrawFn, text: str) -> str:
    """Whole-line edits a person makes: drop, repeat, swap, re-indent, truncate a line."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        if not lines:
            break
        i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        op = draw(st.sampled_from(["drop", "repeat", "swap", "indent", "dedent", "cut", "tab"]))
        if op == "drop":
            del lines[i]
        elif op == "repeat":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(min_value=0, max_value=len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "indent":
            lines[i] = "  " + lines[i]
        elif op == "dedent":
            lines[i] = lines[i][2:] if lines[i].startswith("  ") else lines[i]
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(min_value=0, max_value=len(lines[i])))]
        else:
            lines[i] = "\t" + lines[i]
    return "\n".join(lines) + "\n"


@FEWER
@given(st.data(), st.sampled_from(SEEDS))
def test_mutated_seeds(data: st.DataObject, seed: bytes) -> None:
    if data.draw(st.booleans()):
        load(data.draw(line_edits(seed.decode("utf-8"))))
    else:
        load(data.draw(mutated(seed)))


@given(st.text(max_size=200) | st.sampled_from(SEEDS).flatmap(mutated) | st.builds(
    "x: {}\n".format, st.sampled_from([".inf", "-.Inf", ".nan", "1e999", "-1e400", "!!float .inf", "1.5", "0x1F"])))
@example("x: .inf\n")  # became a schema default/maximum that tools/list could not encode
@example("x: .nan\n")
@example("x: 1e999\n")
def test_yaml_values_are_json(data: bytes | str) -> None:
    """tools.yaml is plain data that ends up in JSON messages: whatever loads must encode."""
    try:
        value, _marks = load_yaml(data, FILE)
    except YamlProblems as exc:
        problem = str(exc)
    else:
        problem = ""
    if problem:
        assert problem.startswith(FILE), problem
        return
    json.dumps(value, allow_nan=False)


def test_billion_laughs_is_refused() -> None:
    with pytest.raises(ToolsFileError, match=r"^fuzz/tools\.yaml:\d+:\d+: .*expands to more than"):
        parse_config(BILLION_LAUGHS, FILE, environ={})
