"""Build a `Resource` from one entry of `resources:`.

Three kinds: a static resource (a file, a text, or a command's output at a
fixed `uri`), a directory (every file under it matching `glob`, listed under a
`uri` prefix), and a template (`uri_template` with `{name}` / `{+name}`
expressions that become parameters, matched by a regular expression; a file
template stays inside the directory its literal part names).
"""

from __future__ import annotations

import os
import re

from mcpcli.toolsfile import templating
from mcpcli.toolsfile.build_context import BuildContext
from mcpcli.toolsfile.build_params import build_params
from mcpcli.toolsfile.build_run import build_run
from mcpcli.toolsfile.model import JSON, Param, Resource
from mcpcli.toolsfile.templating import Template
from mcpcli.toolsfile.yamlstrict import Path

__all__ = ["build_resource", "build_template"]

_EXPRESSION = r"\{([+]?)([A-Za-z_][A-Za-z0-9_]*)\}"


def build_resource(ctx: BuildContext, item: JSON, path: Path) -> Resource | None:
    sources = [k for k in ("file", "directory", "command", "text") if k in item]
    if len(sources) != 1:
        ctx.fail(path, "give exactly one of file, directory, command or text")
        return None
    source = sources[0]
    has_uri, has_tpl = "uri" in item, "uri_template" in item
    if has_uri and has_tpl:
        ctx.fail(path, "give uri or uri_template, not both")
        return None
    common: JSON = {
        "mime_type": item.get("mime_type"),
        "title": item.get("title"),
        "description": item.get("description"),
        "annotations": item.get("annotations"),
        "icons": item.get("icons"),
    }
    if has_tpl:
        return build_template(ctx, item, path, source, common)
    if "params" in item:
        ctx.fail((*path, "params"), "params go with uri_template")
        return None
    if source == "directory":
        return _directory(ctx, item, path, common)
    return _static(ctx, item, path, source, common)


def _directory(ctx: BuildContext, item: JSON, path: Path, common: JSON) -> Resource | None:
    directory = ctx.resolve_dir(item["directory"])
    if not os.path.isdir(directory):
        ctx.warn((*path, "directory"), f"directory {directory} does not exist")
    prefix = item.get("uri") or ("file://" + _quote_path(os.path.realpath(directory)) + "/")
    if not prefix.endswith("/"):
        ctx.fail((*path, "uri"), "the uri of a directory resource is a prefix and must end with /")
        return None
    return Resource(kind="directory", name=item.get("name") or item["directory"], uri=prefix,
                    uri_template=None, source="directory", directory=directory,
                    glob=item.get("glob", "*"), **common)


def _static(ctx: BuildContext, item: JSON, path: Path, source: str, common: JSON) -> Resource | None:
    """A file, a text or a command's output at one fixed URI."""
    if "glob" in item:
        ctx.fail((*path, "glob"), "glob goes with directory")
    uri = item.get("uri")
    file_tpl = None
    if source == "file":
        full = ctx.resolve_dir(item["file"])
        if templating.PLACEHOLDER.search(item["file"]):
            ctx.fail((*path, "file"), "placeholders in file need a uri_template")
            return None
        if not os.path.isfile(full):
            ctx.warn((*path, "file"), f"file {full} does not exist")
        file_tpl = templating.parse(full, strict=False)
        uri = uri or "file://" + _quote_path(os.path.realpath(full))
    if uri is None:
        ctx.fail(path, "a resource needs a uri")
        return None
    if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", uri):
        ctx.fail((*path, "uri"), f"{uri!r} is not a URI (scheme:...)")
        return None
    name = item.get("name")
    if not name:
        ctx.fail(path, "missing required key 'name'")
        return None
    text = templating.parse(item["text"], strict=False) if source == "text" else None
    command = None
    if source == "command":
        command = build_run(ctx, item["command"], (*path, "command"), {}, where=f"resource {uri!r}")
        if command is None:
            return None
    return Resource(kind="static", name=name, uri=uri, uri_template=None, source=source,
                    file=file_tpl, text=text, command=command, subscribe=bool(item.get("subscribe")),
                    **common)


def build_template(ctx: BuildContext, item: JSON, path: Path, source: str, common: JSON) -> Resource | None:
    template = item["uri_template"]
    names = re.findall(_EXPRESSION, template)
    leftovers = re.sub(r"\{[+]?[A-Za-z_][A-Za-z0-9_]*\}", "", template)
    if "{" in leftovers or "}" in leftovers:
        ctx.fail((*path, "uri_template"), "only {name} and {+name} expressions are supported")
        return None
    if not names:
        ctx.fail((*path, "uri_template"), "a uri_template needs at least one {name}")
        return None
    repeated = sorted({n for _, n in names if [m for _, m in names].count(n) > 1})
    if repeated:
        ctx.fail((*path, "uri_template"), f"{{{repeated[0]}}} appears more than once "
                 "(each variable names one parameter)")
        return None
    if source == "directory":
        ctx.fail(path, "a directory cannot be a template")
        return None
    params = _template_params(ctx, item, path, [n for _, n in names])
    if params is None:
        return None
    known = set(params) | {"mcp.config_dir"}
    file_tpl = text = None
    command = None
    file_root = None
    if source == "file":
        found = _template_file(ctx, item, path, known)
        if found is None:
            return None
        file_tpl, file_root = found
    elif source == "text":
        text = ctx.template(item["text"], (*path, "text"), known)
        if text is None:
            return None
    else:
        command = build_run(ctx, item["command"], (*path, "command"), params, where=f"resource {template!r}")
        if command is None:
            return None
    name = item.get("name")
    if not name:
        ctx.fail(path, "missing required key 'name'")
        return None
    if "subscribe" in item:
        ctx.fail((*path, "subscribe"), "subscribe goes with file resources")
    return Resource(kind="template", name=name, uri=None, uri_template=template, source=source,
                    file=file_tpl, text=text, command=command, params=params,
                    matcher=re.compile(_matcher_regex(template)), file_root=file_root, **common)


def _template_params(ctx: BuildContext, item: JSON, path: Path, names: list[str]) -> dict[str, Param] | None:
    """One parameter per expression (a string unless declared under params:)."""
    declared = item.get("params") or {}
    raw_params = {n: declared.get(n, {"type": "string"}) for n in names}
    for extra in declared:
        if extra not in raw_params:
            ctx.fail((*path, "params", extra), f"{extra!r} does not appear in the uri_template", key=True)
            return None
    params = build_params(ctx, raw_params, (*path, "params"), ctx.base_dir, template=True)
    if len(params) != len(raw_params):
        return None
    return params


def _matcher_regex(template: str) -> str:
    """`{name}` matches one path segment, `{+name}` any text (slashes included)."""
    regex = ""
    pos = 0
    for match in re.finditer(_EXPRESSION, template):
        regex += re.escape(template[pos:match.start()])
        regex += f"(?P<{match.group(2)}>.+)" if match.group(1) else f"(?P<{match.group(2)}>[^/?#]+)"
        pos = match.end()
    regex += re.escape(template[pos:])
    return regex


def _template_file(ctx: BuildContext, item: JSON, path: Path, known: set[str]) -> tuple[Template, str] | None:
    """The file path template, and the directory the resolved file must stay inside."""
    raw_file = item["file"]
    file_tpl = ctx.template(os.path.join(ctx.base_dir, raw_file), (*path, "file"), known)
    if file_tpl is None:
        return None
    literal = file_tpl.parts[0].text if file_tpl.parts and file_tpl.parts[0].name is None else ""
    root = os.path.dirname(literal) if not literal.endswith("/") else literal
    return file_tpl, os.path.realpath(root or ctx.base_dir)


def _quote_path(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/")
