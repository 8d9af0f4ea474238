"""Loading tools.yaml: strict YAML, YAML 1.1 traps, unknown keys, semantic checks, file:line:col."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from helpers import REPO, mcp_in

from mcpcli.toolsfile.load import ToolsFileError, load_config, parse_config

HEAD = "version: 1\n"


def problems(text: str, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ToolsFileError) as info:
        parse_config(textwrap.dedent(text).encode(), "t.yaml", environ=environ or {"PATH": "/usr/bin:/bin"})
    return [str(p) for p in info.value.problems]


def one_tool(body: str) -> str:
    return HEAD + "tools:\n  - name: t\n    description: d\n" + textwrap.indent(textwrap.dedent(body), "    ")


def test_a_minimal_file_loads() -> None:
    config = parse_config(one_tool("run: {argv: [echo, hi]}\n"), "t.yaml")
    assert list(config.tools) == ["t"]
    assert config.tools["t"].listing()["inputSchema"] == {
        "type": "object", "properties": {}, "additionalProperties": False}


@pytest.mark.parametrize(
    ("yaml_text", "where", "fragment"),
    [
        # YAML 1.1 booleans: rejected with a suggestion, never silently converted.
        (one_tool("params:\n  x: {type: string, default: no}\nrun: {argv: [echo]}\n"), "t.yaml:6:34",
         "unquoted 'no' is ambiguous"),
        (one_tool("params:\n  x: {type: string, enum: [yes, off]}\nrun: {argv: [echo]}\n"), "t.yaml:6:32",
         "unquoted 'yes'"),
        (HEAD + "on: 1\n", "t.yaml:2:1", "unquoted 'on'"),
        # Octal-looking, base-60, underscores, dates.
        (one_tool("params:\n  mode: {type: string, default: 0777}\nrun: {argv: [echo]}\n"), "t.yaml:6:37",
         "leading 0 as octal"),
        (one_tool("run: {argv: [echo], timeout: 1:30}\n"), "t.yaml:5:34", "base-60"),
        (one_tool("params:\n  n: {type: integer, default: 1_000}\nrun: {argv: [echo]}\n"), "t.yaml:6:35",
         "'1_000'"),
        (HEAD + "server: {version: 2024-01-02}\n", "t.yaml:2:19", "unquoted date"),
        # Duplicate keys: PyYAML would keep the last one silently.
        (one_tool("run: {argv: [echo]}\nrun: {argv: [true]}\n"), "t.yaml:6:5", "duplicate key 'run' (first at line 5)"),
        # Object-constructing tags.
        (HEAD + "x-a: !!python/object/apply:os.system [id]\n", "t.yaml:2:6", "is not allowed"),
        # An unquoted {{ x }} is a YAML mapping.
        (one_tool("params:\n  p: {type: string}\nrun:\n  argv:\n    - echo\n    - {{ p }}\n"), "t.yaml:10:11",
         "quote the whole value"),
        (HEAD + "a: [1, 2\n", "t.yaml:3:1", "invalid YAML"),
        (HEAD + "tools:\n\t- name: x\n", "t.yaml:3:1", "tab character"),
        (HEAD + "---\nversion: 1\n", "t.yaml:3:1", "only one YAML document"),
    ],
)
def test_yaml_traps_are_errors_with_positions(yaml_text: str, where: str, fragment: str) -> None:
    found = problems(yaml_text)
    assert any(p.startswith(where) and fragment in p for p in found), found


def test_quoted_values_and_explicit_str_are_fine() -> None:
    config = parse_config(one_tool(
        "params:\n  x: {type: string, enum: ['yes', !!str no, \"0777\"], default: 'yes'}\nrun: {argv: [echo]}\n"),
        "t.yaml")
    assert config.tools["t"].params["x"].schema["enum"] == ["yes", "no", "0777"]


@pytest.mark.slow
def test_billion_laughs_fails_fast() -> None:
    lines = [HEAD, "x-a: &a [1,1,1,1,1,1,1,1,1,1]\n"]
    prev = "a"
    for name in "bcdefghij":
        lines.append(f"x-{name}: &{name} [" + ",".join(f"*{prev}" for _ in range(10)) + "]\n")
        prev = name
    found = problems("".join(lines))
    assert any("billion laughs" in p for p in found)


def test_unknown_key_suggests_the_right_one() -> None:
    found = problems(one_tool("run: {argv: [echo], timout: 5s}\n"))
    assert found == ["t.yaml:5:25: error: tool 't': run.timout: unknown key 'timout' (did you mean 'timeout'?)"]


def test_wrong_type_hints_at_quoting() -> None:
    found = problems(HEAD + "server: {name: x, version: 1.10}\n")
    assert found == ["t.yaml:2:28: error: server.version: expected text, got a number (quote it: '1.10')"]


def test_every_error_is_reported_not_just_the_first() -> None:
    found = problems(HEAD + "tools:\n  - name: a\n    descripton: x\n    run: {argv: [echo]}\n  - name: 'b c'\n"
                     "    description: y\n    run: {argv: [echo]}\n")
    assert len(found) >= 3
    assert any("descripton" in p and "did you mean 'description'" in p for p in found)
    assert any("'b c'" in p for p in found)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("params:\n  x: {type: string}\nrun: {script: 'echo {{ x }}'}\n", "not allowed in a shell script"),
        ("run: {argv: [echo, '{{ nope }}']}\n", "unknown placeholder {{ nope }}"),
        ("params:\n  x: {type: string}\nrun: {argv: [echo, '{{ x | upper }}']}\n", "is not a placeholder"),
        ("params:\n  x: {type: string}\nrun: {argv: [echo], env: {LD_PRELOAD: '{{ x }}'}}\n",
         "cannot be mapped into LD_PRELOAD"),
        ("params:\n  x: {type: string}\nrun: {argv: [echo], env: {BASH_ENV: '{{ x }}'}}\n",
         "cannot be mapped into BASH_ENV"),
        ("params:\n  x: {type: string}\nrun: {argv: [echo], env: {PATH: 'a:{{ x }}'}}\n", "cannot be mapped into PATH"),
        ("run: {argv: [echo], inherit_env: [LD_PRELOAD]}\n", "inheriting LD_PRELOAD"),
        ("run: {argv: [echo], env: {MCP_ARG_X: y}}\n", "reserved for mcpcli"),
        ("params:\n  n: {type: integer, default: 5, maximum: 3}\nrun: {argv: [echo]}\n", "the default 5 is invalid"),
        ("params:\n  Foo-Bar: {type: string}\nrun: {argv: [echo]}\n", "must be letters, digits and _"),
        ("params:\n  mcp: {type: string}\nrun: {argv: [echo]}\n", "is reserved"),
        ("params:\n  ab: {type: string}\n  AB: {type: string}\nrun: {argv: [echo]}\n", "both map to MCP_ARG_AB"),
        ("params:\n  p: {type: string, pattern: '(['}\nrun: {argv: [echo]}\n", "invalid regular expression"),
        ("run: {argv: [echo], env: {T: {secret: NOPE}}}\n", "unknown secret 'NOPE'"),
        ("params:\n  a: {type: array}\nrun: {argv: [echo, 'x{{ a }}']}\n", "can only be a whole element"),
        ("params:\n  p: {type: string}\nrun: {argv: ['{{ p }}']}\n", "must be fixed text"),
        ("run: {argv: [echo], script: x}\n", "exactly one of argv"),
        ("mock: {text: hi}\nrun: {argv: [echo]}\n", "exactly one of run"),
        ("run: {argv: [echo]}\noutput: {format: image}\n", "needs a mime_type"),
        ("run: {argv: [echo]}\noutput: {schema: {type: object}}\n", "goes with format: json"),
        ("run: {argv: [echo], timeout: 2h}\n", "exceeds limits.max_timeout"),
    ],
)
def test_semantic_errors(body: str, fragment: str) -> None:
    found = problems(one_tool(body))
    assert any(fragment in p for p in found), found
    assert all(re.match(r"^t\.yaml:\d+:\d+: error: ", p) for p in found), found


def test_duplicate_tool_names() -> None:
    found = problems(HEAD + "tools:\n  - {name: a, description: x, mock: {text: a}}\n"
                     "  - {name: a, description: y, mock: {text: b}}\n")
    assert found == ["t.yaml:4:12: error: tool 'a': name: duplicate tool name 'a' (first at line 3)"]


def test_tool_names_follow_the_spec() -> None:
    found = problems(HEAD + "tools:\n  - {name: 'has space', description: x, mock: {text: a}}\n"
                     f"  - {{name: '{'x' * 129}', description: x, mock: {{text: a}}}}\n")
    assert len(found) == 2


def test_secrets_missing_and_present(tmp_path: Path) -> None:
    text = HEAD + "secrets:\n  TOKEN: {from_env: MY_TOKEN}\n"
    assert any("MY_TOKEN is not set" in p for p in problems(text, {}))
    config = parse_config(text, "t.yaml", environ={"MY_TOKEN": "s3cret-value"})
    assert config.secrets == {"TOKEN": "s3cret-value"}
    (tmp_path / "tok").write_text("from-file\n")
    config = parse_config(HEAD + "secrets:\n  T: {from_file: tok}\n", str(tmp_path / "t.yaml"))
    assert config.secrets == {"T": "from-file"}
    optional = parse_config(HEAD + "secrets:\n  T: {from_env: NOPE, required: false}\n", "t.yaml", environ={})
    assert optional.secrets == {}


def test_env_interpolation() -> None:
    text = HEAD + "server: {name: '${NAME}', version: '${VER:-9}'}\ntools:\n  - name: t\n    description: '${X}'\n" \
                  "    run: {script: 'echo ${HOME}'}\n"
    config = parse_config(text, "t.yaml", environ={"NAME": "svc"})
    assert config.server == {"name": "svc", "version": "9"}
    # Descriptions and shell scripts are content: never interpolated.
    assert config.tools["t"].description == "${X}"
    assert config.tools["t"].run.script == "echo ${HOME}"
    found = problems(HEAD + "server: {name: '${NOPE_NOT_SET}'}\n", {})
    assert found == ["t.yaml:2:16: error: environment variable NOPE_NOT_SET is not set "
                     "(export it, or write ${NOPE_NOT_SET:-default})"]
    escaped = parse_config(HEAD + "server: {name: '$${LITERAL}'}\n", "t.yaml", environ={})
    assert escaped.server["name"] == "${LITERAL}"


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "the file is empty"),
        (b"version: 1\nserver: {name: \xff}\n", "not UTF-8"),
        (b"- a\n- b\n", "must be a mapping"),
        (b"tools: []\n", "missing required key 'version'"),
        (b"version: 2\n", "must be 1"),
    ],
)
def test_file_level_errors(data: bytes, fragment: str) -> None:
    with pytest.raises(ToolsFileError) as info:
        parse_config(data, "t.yaml")
    assert fragment in str(info.value.problems[0])


def test_bom_and_crlf_are_accepted() -> None:
    config = parse_config(b"\xef\xbb\xbfversion: 1\r\ntools:\r\n  - {name: a, description: x, mock: {text: a}}\r\n",
                          "t.yaml")
    assert list(config.tools) == ["a"]


def test_disabled_tools_do_not_exist() -> None:
    config = parse_config(HEAD + "tools:\n  - {name: a, description: x, mock: {text: a}, enabled: false}\n", "t.yaml")
    assert config.tools == {}


def test_missing_program_is_a_warning(tmp_path: Path) -> None:
    config = parse_config(one_tool("run: {argv: [no-such-program-xyz]}\n"), str(tmp_path / "t.yaml"),
                          environ={"PATH": "/usr/bin:/bin"})
    assert any("no-such-program-xyz" in str(w) and "not found on PATH" in str(w) for w in config.warnings)


def test_published_schema_is_anchored_and_closed() -> None:
    config = parse_config(one_tool(
        "params:\n  name: {type: string, pattern: '[a-z]+'}\n  dir: {type: path, default: '.'}\nrun: {argv: [echo]}\n"),
        "t.yaml")
    schema = config.tools["t"].input_schema
    assert schema["properties"]["name"]["pattern"] == "^(?:[a-z]+)$"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["name"]


# -- the CLI ---------------------------------------------------------------------------


def test_check_prints_every_problem_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + "tools:\n  - name: a\n    descripton: x\n    run: {argv: [echo], timout: 1}\n")
    result = mcp_in("serve", "--check", str(bad))
    assert result.code == 2, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert f"{bad}:4:5: error: tool 'a': descripton: unknown key 'descripton' (did you mean 'description'?)" in lines
    assert any(line.startswith(f"{bad}:5:25: error:") and "timout" in line for line in lines)
    assert "Traceback" not in result.stderr


def test_check_accepts_the_example() -> None:
    result = mcp_in("serve", "--check", str(REPO / "examples" / "tools.yaml"))
    assert result.code == 0, result
    assert "valid (7 tools, 3 resources, 2 prompts)" in result.stderr


def test_check_on_missing_file() -> None:
    result = mcp_in("serve", "--check", "/nonexistent/tools.yaml")
    assert result.code == 2
    assert "no such file" in result.stderr


@pytest.mark.slow
def test_print_schema_is_the_format_schema_and_validates_the_example() -> None:
    import jsonschema
    import yaml

    result = mcp_in("serve", "--print-schema")
    assert result.code == 0
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    example = yaml.safe_load((REPO / "examples" / "tools.yaml").read_text())
    jsonschema.validate(example, schema)


def test_bundled_example_is_the_examples_file() -> None:
    from mcpcli.toolsfile import example_path

    assert Path(example_path()).read_bytes() == (REPO / "examples" / "tools.yaml").read_bytes()
    result = mcp_in("serve", "--print-example")
    assert result.code == 0
    assert result.stdout == (REPO / "examples" / "tools.yaml").read_text()


def test_yaml_target_with_errors_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + "tools:\n  - name: a\n    description: x\n    run: {argv: [echo], timeout: yes}\n")
    result = mcp_in("tools", "list", str(bad))
    assert result.code == 2, result
    assert f"mcp: error: {bad}:5:34: unquoted 'yes' is ambiguous" in result.stderr
    assert "Traceback" not in result.stderr


def test_load_config_reads_files(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(HEAD)
    assert load_config(path).tools == {}


def test_the_conformance_fixture_is_valid() -> None:
    result = mcp_in("serve", "--check", str(REPO / "tests" / "conformance" / "server.yaml"))
    assert result.code == 0, result


def test_env_prefix_form_is_interpolated_too() -> None:
    config = parse_config(HEAD + "server: {name: '${env:NAME}'}\n", "t.yaml", environ={"NAME": "svc"})
    assert config.server["name"] == "svc"


# -- problems that used to escape the collector -----------------------------------------


def test_a_repeated_uri_template_variable_is_a_positioned_problem() -> None:
    found = problems(HEAD + "resources:\n  - name: r\n    uri_template: 'x://{a}/{+a}'\n    text: 'hi {{ a }}'\n")
    assert found == ["t.yaml:4:19: error: resource 'r': uri_template: {a} appears more than once "
                     "(each variable names one parameter)"]


@pytest.mark.parametrize("schema", ["{type: object, properties: 3}", "{type: object, $schema: [1]}"])
def test_a_bad_input_schema_is_a_positioned_problem_and_checking_goes_on(schema: str) -> None:
    found = problems(
        HEAD + "tools:\n"
        f"  - name: a\n    description: x\n    input_schema: {schema}\n    run: {{argv: [cat], stdin: json}}\n"
        "  - name: b\n    description: y\n    run: {argv: [echo], timeout: 2h}\n"
    )
    assert len(found) == 2, found
    assert found[0].startswith("t.yaml:5:19: error: tool 'a': input_schema: the tool's inputSchema is not a valid "
                               "JSON Schema: "), found
    assert found[1].startswith("t.yaml:9:34: error: tool 'b'") and "max_timeout" in found[1], found


def test_a_bad_output_schema_says_which_schema_and_checking_goes_on() -> None:
    found = problems(
        HEAD + "tools:\n"
        "  - name: a\n    description: x\n    run: {argv: [echo], timeout: 2h}\n"
        "    output: {format: json, schema: {type: object, required: 5}}\n"
    )
    assert len(found) == 2, found
    assert "max_timeout" in found[0]
    assert found[1] == ("t.yaml:6:36: error: tool 'a': output.schema: the tool's outputSchema is not a "
                        "valid JSON Schema: 5 is not of type 'array'"), found
    assert "inputSchema" not in found[1]


def test_pattern_on_an_integer_is_reported_once() -> None:
    found = problems(one_tool("params:\n  n: {type: integer, pattern: '[0-9]+'}\nrun: {argv: [echo]}\n"))
    assert found == ["t.yaml:6:35: error: tool 't': params.n.pattern: pattern applies to string and path "
                     "parameters only (this one is integer)"]


def test_check_reports_template_and_schema_mistakes_as_problems(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + "resources:\n  - name: r\n    uri_template: 'x://{a}/{a}'\n    text: hi\n"
                   "tools:\n  - name: a\n    description: x\n    input_schema: {type: object, properties: 3}\n"
                   "    run: {argv: [cat], stdin: json}\n")
    result = mcp_in("serve", "--check", str(bad))
    assert result.code == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{bad}:4:19: error: resource 'r': uri_template: {{a}} appears more than once")
    assert lines[1].startswith(f"{bad}:9:19: error: tool 'a': input_schema: ")
    assert "internal error" not in result.stderr


def test_check_refuses_references_outside_the_schema(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        HEAD + "tools:\n"
        "  - name: a\n    description: x\n    params:\n      thing:\n        type: object\n"
        "        schema: {$ref: 'https://example.com/item.json'}\n    mock: {text: ok}\n"
        "  - name: b\n    description: y\n    input_schema:\n      type: object\n"
        "      properties:\n        p: {$ref: 'other.json#/x'}\n        q: {enum: [{$ref: data}]}\n"
        "        r: {$ref: '#/$defs/r'}\n"
        "      $defs: {r: {type: string}}\n    run: {argv: [cat], stdin: json}\n"
        "  - name: c\n    description: z\n    run: {argv: [echo]}\n"
        "    output: {format: json, schema: {type: object, properties: {o: {$dynamicRef: 'http://x/y'}}}}\n"
    )
    result = mcp_in("serve", "--check", str(bad))
    assert result.code == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"{bad}:8:24: error: tool 'a': params.thing.schema.$ref: the parameter's schema "
                               "refers outside itself ('https://example.com/item.json')"), lines
    assert lines[1].startswith(f"{bad}:15:19: error: tool 'b': input_schema.properties.p.$ref: the tool's "
                               "inputSchema refers outside itself ('other.json#/x')"), lines
    assert lines[2].startswith(f"{bad}:23:81: error: tool 'c': output.schema.properties.o.$dynamicRef: "), lines
    assert all("(copy the referenced schema under $defs" in line for line in lines)
    assert "Traceback" not in result.stderr


def test_check_refuses_local_references_to_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        HEAD + "tools:\n"
        "  - name: a\n    description: x\n    input_schema:\n      type: object\n"
        "      $defs: {known: {type: string}, 'a/b': {$anchor: here}}\n"
        "      properties:\n        k: {$ref: '#/$defs/known'}\n        s: {$ref: '#/$defs/a~1b'}\n"
        "        h: {$ref: '#here'}\n        n: {$ref: '#/$defs/nope'}\n"
        "    run: {argv: [cat], stdin: json}\n"
    )
    result = mcp_in("serve", "--check", str(bad))
    assert result.code == 2, result
    assert result.stderr.strip().splitlines() == [
        f"{bad}:12:19: error: tool 'a': input_schema.properties.n.$ref: the tool's inputSchema: "
        "the reference '#/$defs/nope' points to nothing in it"]


# -- one run reports every problem (issue 22) ---------------------------------------------

SIX_MISTAKES = """\
version: 1
tools:
  - name: greet
    description: Say hello.
    params:
      who: {type: strng}
    run:
      argv: [echo, "{{ whom }}"]
    annotations: {readOnlyHint: no}
  - name: noop
    params: {}
    run: {argv: [echo]}
    timout: 5s
  - name: greet
    description: Again.
    run: {argv: [echo, hi]}
"""


def test_check_reports_six_mistakes_of_every_kind_in_one_run_in_file_order(tmp_path: Path) -> None:
    """A YAML 1.1 `no`, a type typo, a placeholder naming no parameter, a missing description,
    an unknown key and a duplicate tool name: six problems, one run, each at file:line:col."""
    bad = tmp_path / "six.yaml"
    bad.write_text(SIX_MISTAKES)
    result = mcp_in("serve", "--check", str(bad))
    assert result.code == 2, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert [line.split(": error: ", 1)[0] for line in lines] == [
        f"{bad}:6:19", f"{bad}:8:20", f"{bad}:9:33", f"{bad}:10:5", f"{bad}:13:5", f"{bad}:14:11"]
    assert "'strng' is not one of" in lines[0].replace('"', "'") and "did you mean 'string'?" in lines[0]
    assert "unknown placeholder {{ whom }}" in lines[1] and "did you mean 'who'?" in lines[1]
    assert "unquoted 'no' is ambiguous" in lines[2]
    assert "tool 'noop': missing required key 'description'" in lines[3]
    assert "unknown key 'timout'" in lines[4]
    assert "duplicate tool name 'greet' (first at line 3)" in lines[5]


def test_a_value_yaml_refused_is_reported_once_and_checking_goes_on() -> None:
    """The YAML 1.1 `no` is not also 'expected true or false, got nothing'; the rest is still checked."""
    found = problems(one_tool("annotations: {readOnlyHint: no, destructiveHint: 3}\nrun: {argv: [echo, '{{ x }}']}\n"))
    assert len(found) == 3, found
    assert "unquoted 'no'" in found[0]
    assert "destructiveHint: expected true or false, got an integer" in found[1]
    assert "unknown placeholder {{ x }}" in found[2]


def test_an_unset_variable_does_not_stop_the_other_checks() -> None:
    found = problems(one_tool("run: {argv: [echo, '${NOT_SET_HERE}', '{{ x }}'], timout: 1}\n"), {})
    assert len(found) == 3, found
    assert "environment variable NOT_SET_HERE is not set" in found[0]
    assert any("unknown key 'timout'" in p for p in found)
    assert any("unknown placeholder {{ x }}" in p for p in found)


def test_a_parameter_with_a_problem_is_no_unknown_placeholder() -> None:
    """Its placeholders, `when:` and `stdin:` are not reported as naming nothing."""
    found = problems(one_tool("params:\n  who: {type: strng}\n  n: {type: integer, pattern: x}\n"
                              "run:\n  argv: [echo, '{{ who }}', {when: who, argv: [-v]}, '{{ nope }}']\n"
                              "  stdin: '{{ n }}'\n"))
    assert len(found) == 3, found
    assert "params.who.type" in found[0]
    assert "pattern applies to string and path parameters only" in found[1]
    assert "unknown placeholder {{ nope }}" in found[2]


def test_a_duplicate_of_an_invalid_tool_is_reported_with_it() -> None:
    found = problems(HEAD + "tools:\n  - {name: a, description: x, run: {argv: [echo, '{{ y }}']}}\n"
                     "  - {name: a, description: y, mock: {text: b}}\n"
                     "prompts:\n  - {name: p, messages: [{text: '{{ q }}'}]}\n"
                     "  - {name: p, messages: [{text: hi}]}\n")
    assert len(found) == 4, found
    assert "unknown placeholder {{ y }}" in found[0]
    assert "duplicate tool name 'a' (first at line 3)" in found[1]
    assert "unknown placeholder {{ q }}" in found[2]
    assert "duplicate prompt name 'p' (first at line 6)" in found[3]


@pytest.mark.parametrize("broken", [
    "defaults: 5\nlimits: [1]\n",
    "secrets: {A: 5}\nserver: 3\n",
    "resources: [5, {name: r}]\nprompts: [{name: p}]\nservers: [{}, 3]\n",
    "tools:\n  - 7\n  - {description: no name, run: {argv: [echo]}}\n  - {name: t2, description: d, run: 5}\n",
])
def test_entries_of_the_wrong_form_are_reported_and_the_others_still_checked(broken: str) -> None:
    """Whatever shape the format's check refused, the build never crashes, and a later tool's
    own mistake is still found."""
    text = HEAD + broken
    if "tools:" not in broken:
        text += "tools:\n"
    text += "  - {name: late, description: d, run: {argv: [echo, '{{ missing }}']}}\n"
    found = problems(text)
    assert len(found) >= 2, found
    assert any("unknown placeholder {{ missing }}" in p for p in found), found
    assert found == sorted(found, key=lambda p: [int(n) for n in p.split(":")[1:3]])
