"""JSON Schema validation of tool arguments (and, in `serve`, of inputs and outputs).

A two-function interface (`compile_schema`, `errors`) keeps the validator library
swappable. `jsonschema` is imported here only, on first use. The dialect is the
schema's `$schema`, else 2020-12 (MCP's default since 2025-11-25). References are
resolved inside the schema only: a network `$ref` is never fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from mcpcli.errors import ValidationError

__all__ = ["Validator", "check", "compile_schema", "errors", "preload"]

Validator = Any


def preload() -> None:
    """Import the validator library (to overlap its import with other waiting)."""
    import jsonschema  # noqa: F401


def _no_retrieval(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


@lru_cache(maxsize=32)
def _registry() -> Any:
    from referencing import Registry

    return Registry(retrieve=_no_retrieval)  # type: ignore[call-arg]


def compile_schema(schema: dict[str, Any]) -> Validator:
    """A validator for `schema`; raises `ValidationError` when the schema itself is bad."""
    import jsonschema
    from jsonschema.validators import validator_for

    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValidationError(
            f"the tool's inputSchema is not a valid JSON Schema: {exc.message}"
        ) from None
    return cls(schema, registry=_registry(), format_checker=cls.FORMAT_CHECKER)


def _path(error: Any) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts)


def errors(validator: Validator, instance: Any) -> list[tuple[str, str]]:
    """Every violation as (dotted field path, message), shallowest first."""
    from referencing.exceptions import Unresolvable

    found: list[tuple[str, str]] = []

    def walk(errs: Iterator[Any]) -> None:
        for err in sorted(errs, key=lambda e: (len(e.absolute_path), str(e.message))):
            path = _path(err)
            if err.validator == "required" and isinstance(err.instance, dict):
                missing = [r for r in err.validator_value if r not in err.instance]
                for name in missing:
                    found.append((f"{path}.{name}" if path else name, "is required"))
                continue
            if err.validator == "additionalProperties" and isinstance(err.instance, dict):
                allowed = set((err.schema.get("properties") or {}).keys())
                for name in err.instance:
                    if name not in allowed:
                        found.append((f"{path}.{name}" if path else name, "is not a known field"))
                continue
            found.append((path, err.message))

    try:
        walk(validator.iter_errors(instance))
    except Unresolvable as exc:
        found.append(("", f"the schema has a reference that cannot be resolved here: {exc}"))
    return found


def check(schema: dict[str, Any], instance: Any, *, what: str = "argument") -> None:
    """Raise `ValidationError` naming the first bad field; all of them in `.errors`."""
    problems = errors(compile_schema(schema), instance)
    if not problems:
        return
    path, message = problems[0]
    where = f"{what} {path!r}" if path else f"{what}s"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise ValidationError(
        f"{where} {message}{more}",
        errors=problems,
        hint="see the schema with `mcp tools show`, or skip the check with --no-validate",
    )
