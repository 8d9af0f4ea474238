"""What a change of a JSON Schema does to the other side: a tool's input or its output.

The rule is one for both, pointed two ways. A tool's parameters may only accept
more than before (a client built against the old schema sends what it accepted),
so for an input schema anything narrower is breaking: a parameter removed or now
required, a required one added, a type, enum or bound narrowed. A structured
output may only promise more (a client reads what the old schema promised), so
for an output schema anything wider is breaking: a field removed or no longer
required, a type widened, an enum value added. Bounds, patterns and formats of
an output are reported but never breaking: clients read values, they do not
check bounds.

Compared precisely: `type` (a string or a list; `integer` is within `number`),
`enum` and `const`, `properties` and `required` (recursively), `items`,
`additionalProperties`, the bounds (`minimum`... `maxItems`), `pattern`,
`multipleOf`, `uniqueItems`, `format`, and `anyOf`/`oneOf`, whose variants are
paired by their type (a union of bare types is a type list). Local `$ref`s
(`#/$defs/...`) are followed and an `allOf` whose parts do not disagree is merged,
so moving a schema into `$defs` changes nothing. Keywords not compared in detail
(`not`, `if`, an `allOf` that could not be merged, `patternProperties`,
`prefixItems`, a `$ref` that cannot be followed, `x-mcp-header`...) are "schema
changed" when they differ, and that is counted as breaking: it may be, and only
a person can tell. Annotations
(`description`, `title`, `default`) are reported, never breaking; other unknown
keywords are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcpcli.args import json_type
from mcpcli.validation import local_target

__all__ = ["compare_schemas"]

#: Report one change: (kind, path, detail).
Report = Callable[[str, str, str], None]

ALL_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
#: Bounds that tighten when they rise (lower) or fall (upper).
LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
#: Keywords compared only for equality: a difference may narrow or widen, and only a
#: person can tell which.
OPAQUE = (
    "not", "allOf", "if", "then", "else", "patternProperties", "dependentRequired", "dependentSchemas",
    "dependencies", "propertyNames", "contains", "unevaluatedProperties", "unevaluatedItems", "prefixItems",
    "$ref", "$dynamicRef", "x-mcp-header",
)
#: Keywords that say nothing about which values are valid.
ANNOTATIONS = frozenset({
    "description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
    "$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary", "$defs", "definitions",
    "contentMediaType", "contentEncoding", "contentSchema",
})
#: Nesting followed before giving up (a recursive schema through `$ref`).
MAX_DEPTH = 48
#: `$ref` hops followed at one place.
MAX_REFS = 16

#: The kind reported for each finding, by direction (input: parameters; output).
_KINDS: dict[str, tuple[str, str]] = {
    "removed": ("param-removed", "output-field-removed"),
    "added": ("param-added", "output-field-added"),
    "required-added": ("param-required-added", "output-field-added"),
    "now-required": ("param-now-required", "output-field-now-required"),
    "now-optional": ("param-now-optional", "output-field-now-optional"),
    "narrowed": ("param-type-narrowed", "output-type-narrowed"),
    "widened": ("param-type-widened", "output-type-widened"),
    "enum-removed": ("param-enum-value-removed", "output-enum-value-removed"),
    "enum-added": ("param-enum-value-added", "output-enum-value-added"),
    "tightened": ("param-constraint-tightened", "output-constraint-changed"),
    "loosened": ("param-constraint-loosened", "output-constraint-changed"),
    "variant-removed": ("param-variant-removed", "output-variant-removed"),
    "variant-added": ("param-variant-added", "output-variant-added"),
    "closed": ("param-closed", "output-constraint-changed"),
    "opened": ("param-opened", "output-constraint-changed"),
    "opaque": ("param-schema-changed", "output-schema-changed"),
    "description": ("param-description-changed", "output-description-changed"),
    "default": ("param-default-changed", "output-description-changed"),
}


def compare_schemas(old: Any, new: Any, *, output: bool, report: Report) -> None:
    """Report every difference between two schemas, as (kind, path, detail).

    `path` names the value inside the arguments or the output: `""` for the whole,
    `city`, `options.level`, `tags[]` (the items of an array), `extra.*` (its
    additional properties)."""
    _Walk(old, new, output, report).node(old, new, "", 0)


class _Walk:
    def __init__(self, old_root: Any, new_root: Any, output: bool, report: Report) -> None:
        self.old_root = old_root
        self.new_root = new_root
        self.output = output
        self._report = report

    def report(self, finding: str, path: str, detail: str) -> None:
        self._report(_KINDS[finding][1 if self.output else 0], path, detail)

    # -- one place in both schemas ---------------------------------------------------------------

    def node(self, old: Any, new: Any, path: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        old = _normalize(old, self.old_root)
        new = _normalize(new, self.new_root)
        if _canon(old) == _canon(new):
            return
        self.annotations(old, new, path)
        if _has_union(old) or _has_union(new):
            self.unions(old, new, path, depth)
        else:
            self.types(old, new, path)
            self.enums(old, new, path)
            self.bounds(old, new, path)
            if _may_be(old, "object") and _may_be(new, "object"):
                self.objects(old, new, path, depth)
            if _may_be(old, "array") and _may_be(new, "array"):
                self.arrays(old, new, path, depth)
        self.opaque(old, new, path)

    def annotations(self, old: dict[str, Any], new: dict[str, Any], path: str) -> None:
        changed = [k for k in ("title", "description") if old.get(k) != new.get(k)]
        if changed:
            self.report("description", path, " and ".join(changed) + " changed")
        if ("default" in old, _canon(old.get("default"))) != ("default" in new, _canon(new.get("default"))):
            before = _show(old["default"]) if "default" in old else "none"
            after = _show(new["default"]) if "default" in new else "none"
            self.report("default", path, f"default {before} → {after}")

    def types(self, old: dict[str, Any], new: dict[str, Any], path: str) -> None:
        before, after = _types(old), _types(new)
        if before == after:
            return
        lost = [t for t in (before or ALL_TYPES) if not _accepts(after, t)]
        gained = [t for t in (after or ALL_TYPES) if not _accepts(before, t)]
        detail = f"type {_show_types(before)} → {_show_types(after)}"
        if self.output:
            if gained:
                self.report("widened", path, detail)
            elif lost:
                self.report("narrowed", path, detail)
        elif lost:
            self.report("narrowed", path, detail)
        elif gained:
            self.report("widened", path, detail)

    def enums(self, old: dict[str, Any], new: dict[str, Any], path: str) -> None:
        before, after = _enum(old), _enum(new)
        if before is None and after is None:
            return
        if before is not None and after is not None:
            keys_before = {_canon(v): v for v in before}
            keys_after = {_canon(v): v for v in after}
            removed = [v for k, v in keys_before.items() if k not in keys_after]
            added = [v for k, v in keys_after.items() if k not in keys_before]
            if removed:
                self.report("enum-removed", path, "values removed: " + _show_list(removed))
            if added:
                self.report("enum-added", path, "values added: " + _show_list(added))
        elif after is not None:  # newly limited to a set of values
            self.report("tightened", path, "now limited to: " + _show_list(after))
        elif before is not None:  # no longer limited
            if self.output:
                self.report("enum-added", path, "no longer limited to: " + _show_list(before))
            else:
                self.report("loosened", path, "no longer limited to: " + _show_list(before))

    def bounds(self, old: dict[str, Any], new: dict[str, Any], path: str) -> None:
        tighter: list[str] = []
        looser: list[str] = []
        for key in (*LOWER, *UPPER):
            a, b = _number(old.get(key)), _number(new.get(key))
            if a == b:
                continue
            shown = f"{key} {_show(old.get(key), absent='none')} → {_show(new.get(key), absent='none')}"
            lower = key in LOWER
            if a is None or (b is not None and (b > a if lower else b < a)):
                tighter.append(shown)
            else:
                looser.append(shown)
        for key in ("pattern", "format"):
            a, b = old.get(key), new.get(key)
            if a == b:
                continue
            shown = f"{key} {_show(a, absent='none')} → {_show(b, absent='none')}"
            (looser if b is None else tighter).append(shown)
        a, b = _number(old.get("multipleOf")), _number(new.get("multipleOf"))
        if a != b:
            shown = f"multipleOf {_show(old.get('multipleOf'), absent='none')} → {_show(new.get('multipleOf'), absent='none')}"
            if b is None or (a is not None and b != 0 and (a / b).is_integer()):
                looser.append(shown)  # every multiple of a is a multiple of b
            else:
                tighter.append(shown)
        if bool(old.get("uniqueItems")) != bool(new.get("uniqueItems")):
            shown = f"uniqueItems {bool(old.get('uniqueItems'))} → {bool(new.get('uniqueItems'))}"
            (tighter if new.get("uniqueItems") else looser).append(shown)
        if tighter:
            self.report("tightened", path, "; ".join(tighter))
        if looser:
            self.report("loosened", path, "; ".join(looser))

    def objects(self, old: dict[str, Any], new: dict[str, Any], path: str, depth: int) -> None:
        before = _properties(old)
        after = _properties(new)
        required_before = _required(old)
        required_after = _required(new)
        names = sorted(set(before) | set(after) | required_before | required_after)
        for name in names:
            where = _join(path, name)
            known_before = name in before or name in required_before
            known_after = name in after or name in required_after
            if known_before and not known_after:
                self.report("removed", where, "removed")
                continue
            if known_after and not known_before:
                if name in required_after:
                    types = _types(_normalize(after.get(name, {}), self.new_root))
                    self.report("required-added", where, f"new required {_noun(self.output)} ({_show_types(types)})")
                else:
                    self.report("added", where, f"new optional {_noun(self.output)}")
                continue
            if name in required_after and name not in required_before:
                self.report("now-required", where, "now required")
            elif name in required_before and name not in required_after:
                self.report("now-optional", where, "no longer required")
            self.node(before.get(name, {}), after.get(name, {}), where, depth + 1)
        self.additional(old, new, path, depth)

    def additional(self, old: dict[str, Any], new: dict[str, Any], path: str, depth: int) -> None:
        before, after = old.get("additionalProperties", True), new.get("additionalProperties", True)
        if before is False and after is not False:
            self.report("opened", path, "other properties accepted again")
        elif after is False and before is not False:
            self.report("closed", path, "other properties no longer accepted")
        elif isinstance(before, dict) or isinstance(after, dict):
            self.node({} if before is True else before, {} if after is True else after, _join(path, "*"), depth + 1)

    def arrays(self, old: dict[str, Any], new: dict[str, Any], path: str, depth: int) -> None:
        before, after = old.get("items", {}), new.get("items", {})
        if isinstance(before, list) or isinstance(after, list):  # tuples (draft 4-7): compared whole
            if _canon(before) != _canon(after):
                self.report("opaque", path, "items changed (not compared in detail; review it)")
            return
        self.node(before, after, path + "[]", depth + 1)

    def unions(self, old: dict[str, Any], new: dict[str, Any], path: str, depth: int) -> None:
        """anyOf/oneOf on either side: pair the variants, by equality first, then by type."""
        before, after = _variants(old), _variants(new)
        unmatched_before = [v for v in before if all(_canon(v) != _canon(w) for w in after)]
        unmatched_after = [w for w in after if all(_canon(w) != _canon(v) for v in before)]
        by_type_before = _unique_by_type(unmatched_before)
        by_type_after = _unique_by_type(unmatched_after)
        for key in sorted(set(by_type_before) & set(by_type_after)):
            v, w = by_type_before[key], by_type_after[key]
            unmatched_before.remove(v)
            unmatched_after.remove(w)
            self.node(v, w, path, depth + 1)
        for v in unmatched_before:
            self.report("variant-removed", path, "variant no longer accepted: " + _summary(v))
        for w in unmatched_after:
            self.report("variant-added", path, "new variant: " + _summary(w))

    def opaque(self, old: dict[str, Any], new: dict[str, Any], path: str) -> None:
        changed = [k for k in OPAQUE if _canon(old.get(k)) != _canon(new.get(k))]
        if changed:
            self.report("opaque", path, ", ".join(changed) + " changed (not compared in detail; review it)")


# -- normal form ----------------------------------------------------------------------------------


def _normalize(schema: Any, root: Any, depth: int = 0) -> dict[str, Any]:
    """A schema as an object: booleans as `{}`/`{"not": {}}`, local `$ref`s followed (their
    siblings kept), a single or plainly mergeable `allOf` merged, and a union of bare types
    (`anyOf: [{type: integer}, {type: null}]`) as a type list."""
    if depth > MAX_REFS:
        return schema if isinstance(schema, dict) else {}
    if schema is True or schema is None:
        return {}
    if schema is False:
        return {"not": {}}
    if not isinstance(schema, dict):
        return {}
    for _ in range(MAX_REFS):
        ref = schema.get("$ref")
        target = _pointer(root, ref) if isinstance(ref, str) else None
        if target is None:
            break
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = _merge(target if isinstance(target, dict) else _normalize(target, root, depth + 1), rest) or schema
    branches = schema.get("allOf")
    if isinstance(branches, list) and branches and all(isinstance(b, dict) for b in branches):
        merged: dict[str, Any] | None = {k: v for k, v in schema.items() if k != "allOf"}
        for branch in branches:
            merged = _merge(_normalize(branch, root, depth + 1), merged) if merged is not None else None
        if merged is not None:
            schema = merged
    for key in ("anyOf", "oneOf"):
        variants = schema.get(key)
        if "type" in schema or not isinstance(variants, list) or not variants:
            continue
        normal = [_normalize(v, root, depth + 1) for v in variants]
        if all(set(v) - ANNOTATIONS == {"type"} and _types(v) for v in normal):
            types = sorted({t for v in normal for t in (_types(v) or ())})
            schema = {k: v for k, v in schema.items() if k != key}
            schema["type"] = types[0] if len(types) == 1 else types
    out: dict[str, Any] = schema
    return out


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    """Both schemas in one, when they do not disagree about a keyword that validates
    (`properties` and `required` combine); else None."""
    out = dict(a)
    for key, value in b.items():
        if key not in out or key in ANNOTATIONS:
            out[key] = value
        elif key == "properties" and isinstance(value, dict) and isinstance(out[key], dict):
            if set(value) & set(out[key]):
                return None
            out[key] = {**out[key], **value}
        elif key == "required" and isinstance(value, list) and isinstance(out[key], list):
            out[key] = sorted({*out[key], *value}, key=str)
        elif _canon(out[key]) != _canon(value):
            return None
    return out


def _pointer(root: Any, ref: str) -> Any:
    """The local target of `ref` (`#`, `#/$defs/x`), or None (another document, not found)."""
    return local_target(root, ref)[1]


def _types(schema: dict[str, Any]) -> tuple[str, ...] | None:
    """The types a schema allows (sorted): its `type`, else those of its enum values; None
    for any."""
    value = schema.get("type")
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(t, str) for t in value):
        return tuple(sorted(set(value)))
    values = _enum(schema)
    if values:
        return tuple(sorted({json_type(v) for v in values}))
    return None


def _accepts(types: tuple[str, ...] | None, name: str) -> bool:
    if types is None:
        return True
    return name in types or (name == "integer" and "number" in types)


def _may_be(schema: dict[str, Any], name: str) -> bool:
    return _accepts(_types(schema), name)


def _has_union(schema: dict[str, Any]) -> bool:
    return any(isinstance(schema.get(k), list) for k in ("anyOf", "oneOf"))


def _variants(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """A schema's variants (its anyOf/oneOf), or the schema itself as the only one."""
    for key in ("anyOf", "oneOf"):
        variants = schema.get(key)
        if isinstance(variants, list):
            return [_strip(v) for v in variants]
    return [_strip(schema)]


def _strip(schema: Any) -> dict[str, Any]:
    """A variant without annotations, so that a described and a bare one compare equal."""
    if schema is True:
        return {}
    if schema is False:
        return {"not": {}}
    if not isinstance(schema, dict):
        return {}
    return {k: v for k, v in schema.items() if k not in ANNOTATIONS}


def _unique_by_type(variants: list[dict[str, Any]]) -> dict[tuple[str, ...], dict[str, Any]]:
    seen: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for variant in variants:
        types = _types(variant)
        if types is not None:
            seen.setdefault(types, []).append(variant)
    return {types: found[0] for types, found in seen.items() if len(found) == 1}


def _enum(schema: dict[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    value = schema.get("enum")
    return list(value) if isinstance(value, list) else None


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    value = schema.get("properties")
    return value if isinstance(value, dict) else {}


def _required(schema: dict[str, Any]) -> set[str]:
    value = schema.get("required")
    return {name for name in value if isinstance(name, str)} if isinstance(value, list) else set()


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# -- wording --------------------------------------------------------------------------------------


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _noun(output: bool) -> str:
    return "field" if output else "parameter"


def _show(value: Any, *, absent: str | None = None) -> str:
    if value is None and absent is not None:
        return absent
    return json.dumps(value, ensure_ascii=False)


def _show_types(types: tuple[str, ...] | None) -> str:
    return "any" if types is None else "|".join(types)


def _show_list(values: list[Any], limit: int = 10) -> str:
    shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in values[:limit])
    return shown + (f" (and {len(values) - limit} more)" if len(values) > limit else "")


def _summary(variant: dict[str, Any], limit: int = 80) -> str:
    text = _canon(variant)
    return text if len(text) <= limit else text[: limit - 3] + "..."
