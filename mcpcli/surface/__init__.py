"""A server's surface, written down and compared: what `mcp snapshot` and `mcp diff` do.

The surface is what a client can see of a server without calling anything: its
server info, capabilities and instructions, and its tools (with their schemas
and annotations), resources, resource templates and prompts.

* `snapshot` collects it from a connected client (through the small `Lister`
  protocol, not `Client` itself), makes it canonical (lists in a stable order,
  nothing that changes from one run to the next) and reads a snapshot file back;
* `compare` classifies every difference between two surfaces as breaking or not,
  each with a kind code (`KINDS`, the README's table);
* `schemas` is the part of `compare` that reads JSON Schemas: a parameter may
  only accept more than before, a structured output field only promise more.

Foundations only (`errors`, `jsonrpc`); nothing here knows the CLI or how a
server is reached.
"""

from __future__ import annotations

from mcpcli.surface.compare import KINDS, Change, compare
from mcpcli.surface.snapshot import (
    FORMAT,
    FORMAT_KEY,
    Lister,
    canonical,
    collect,
    dumps,
    load_file,
    loads,
    strip_volatile,
)

__all__ = [
    "FORMAT",
    "FORMAT_KEY",
    "KINDS",
    "Change",
    "Lister",
    "canonical",
    "collect",
    "compare",
    "dumps",
    "load_file",
    "loads",
    "strip_volatile",
]
