"""Build the declared parameters (`params:`) of a tool or a resource template.

Each parameter becomes a `Param` with the published JSON Schema of its value:
names are identifiers that map to distinct `MCP_ARG_<NAME>` variables, keys
apply to the types they make sense for, `pattern` is a valid regular expression
anchored on both ends, a `path` is confined to its `within` roots, the schema
compiles, and a default is valid against it.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from mcpcli.toolsfile.build_context import PARAM_NAME, BuildContext
from mcpcli.toolsfile.build_run import build_run
from mcpcli.toolsfile.model import JSON, MISSING, Param
from mcpcli.toolsfile.structure import describe_path
from mcpcli.toolsfile.yamlstrict import Path

__all__ = ["build_complete", "build_param", "build_params"]

#: Keys copied as they are into the parameter's JSON Schema.
_SCHEMA_KEYS = ("title", "description", "enum", "const", "minLength", "maxLength", "format",
                "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                "minItems", "maxItems", "uniqueItems", "examples")
#: (keys, the parameter types they apply to, what to call those types).
_APPLIES_TO = (
    (("minLength", "maxLength", "pattern", "format"), ("string", "path"), "string and path"),
    (("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"), ("integer", "number"), "number"),
    (("minItems", "maxItems", "uniqueItems", "items"), ("array",), "array"),
    (("within", "must_exist", "kind"), ("path",), "path"),
)


def build_params(ctx: BuildContext, raw: JSON, path: Path, cwd: str, *,
                 template: bool = False) -> dict[str, Param]:
    params: dict[str, Param] = {}
    env_names: dict[str, str] = {}
    for name, spec in raw.items():
        ppath = (*path, name)
        if not PARAM_NAME.match(name):
            ctx.fail(ppath, f"parameter name {name!r} must be letters, digits and _ (not starting with a digit)", key=True)
            continue
        if name in ("mcp", "item"):
            ctx.fail(ppath, f"parameter name {name!r} is reserved", key=True)
            continue
        upper = name.upper()
        if upper in env_names:
            ctx.fail(ppath, f"parameters {env_names[upper]!r} and {name!r} both map to MCP_ARG_{upper}", key=True)
            continue
        env_names[upper] = name
        param = build_param(ctx, name, spec or {}, ppath, cwd, template=template)
        if param is not None:
            params[name] = param
    return params


def build_param(ctx: BuildContext, name: str, spec: JSON, path: Path, cwd: str, *, template: bool = False,
                is_item: bool = False) -> Param | None:
    ptype = spec.get("type", "string")
    schema = _param_schema(ctx, spec, path, ptype)
    if schema is None:
        return None
    within: tuple[str, ...] = ()
    if ptype == "path":
        within = _path_roots(ctx, spec, path, cwd, schema)
    item = None
    if ptype == "array":
        item_spec = spec.get("items") or {"type": "string"}
        item = build_param(ctx, name, item_spec, (*path, "items"), cwd, is_item=True)
        if item is None:
            return None
        schema["items"] = item.schema
    if "schema" in spec:
        extra = spec["schema"]
        for key, value in extra.items():
            if key == "type":
                continue
            schema[key] = value
    if ptype == "object" and "schema" not in spec:
        schema.setdefault("additionalProperties", True)
    validator = ctx.schema(schema, path, "the parameter's schema")
    if validator is None:
        return None
    required = spec.get("required", "default" not in spec)
    default = spec.get("default", MISSING)
    if default is not MISSING and not _check_default(ctx, spec, path, schema, validator, default, required):
        return None
    if template and ptype not in ("string", "integer", "number", "path"):
        ctx.fail(path, "template parameters must be string, integer, number or path")
    complete = None
    if "complete" in spec:
        complete = build_complete(ctx, spec["complete"], (*path, "complete"))
    return Param(
        name=name,
        type=ptype,
        required=bool(required),
        default=default,
        schema=schema,
        within=within,
        must_exist=bool(spec.get("must_exist", False)),
        kind=spec.get("kind", "any"),
        allow_leading_dash=bool(spec.get("allow_leading_dash", False)),
        item=item,
        complete=complete,
    )


def _param_schema(ctx: BuildContext, spec: JSON, path: Path, ptype: str) -> JSON | None:
    """The JSON Schema from the parameter's own keys; None if its pattern is invalid."""
    schema: JSON = {}
    schema["type"] = "string" if ptype == "path" else ptype
    for key in _SCHEMA_KEYS:
        if key in spec:
            schema[key] = spec[key]
    if "pattern" in spec:
        pattern = spec["pattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            ctx.fail((*path, "pattern"), f"invalid regular expression: {exc}")
            return None
        schema["pattern"] = f"^(?:{pattern})$"
    for keys, types, what in _APPLIES_TO:
        for key in keys:
            if key in spec and ptype not in types:
                ctx.fail((*path, key), f"{key} applies to {what} parameters only (this one is {ptype})")
    return schema


def _path_roots(ctx: BuildContext, spec: JSON, path: Path, cwd: str, schema: JSON) -> tuple[str, ...]:
    """The real paths a `path` parameter must stay inside (named in its description)."""
    roots = spec.get("within", [])
    roots = [roots] if isinstance(roots, str) else list(roots)
    within: tuple[str, ...]
    if not roots:
        within = (os.path.realpath(cwd),)
    else:
        within = tuple(os.path.realpath(ctx.resolve_dir(r)) for r in roots)
    for root in within:
        if not os.path.isdir(root):
            ctx.warn((*path, "within") if roots else path, f"root directory {root} does not exist")
    note = "A path inside " + ", ".join(within)
    schema["description"] = (schema.get("description", "").rstrip(". ") + ". " + note).lstrip(". ")
    return within


def _check_default(ctx: BuildContext, spec: JSON, path: Path, schema: JSON, validator: Any, default: Any,
                   required: Any) -> bool:
    """Check a default (and publish it in the schema); False if the parameter is unusable."""
    if default is None:
        ctx.fail((*path, "default"), "a default cannot be null (leave it out, and set required: false)")
        return False
    schema["default"] = default
    problems = [m for _, m in _validation_errors(validator, default)]
    if problems:
        ctx.fail((*path, "default"), f"the default {json.dumps(default)} is invalid: {problems[0]}")
    if required and "required" in spec:
        ctx.fail((*path, "required"), "a parameter with a default cannot be required")
    return True


def build_complete(ctx: BuildContext, spec: Any, path: Path) -> Any:
    """`complete:` values: a fixed list, or a command that prints them."""
    if isinstance(spec, list):
        return tuple(str(v) for v in spec)
    return build_run(ctx, spec, path, {}, where=describe_path(path, ctx.raw), complete=True)


def _validation_errors(validator: Any, instance: Any) -> list[tuple[str, str]]:
    from mcpcli.validation import errors

    return errors(validator, instance)
