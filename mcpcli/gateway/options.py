"""`GatewayOptions`: how a gateway reaches its upstreams and where it reports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcpcli.core import flags

if TYPE_CHECKING:
    from mcpcli.config import Config
    from mcpcli.connect import ConnectOptions

__all__ = ["GatewayOptions"]


@dataclass(frozen=True)
class GatewayOptions:
    """Settings shared by every upstream of one gateway.

    `connect` is the CLI's connection settings (token store, auth mode, insecure,
    connect timeout); each upstream gets a copy with its own env and headers and
    never a downstream client's credentials. `config` resolves configured server
    names (None: the user's config file).
    """

    #: Connect every upstream when the gateway starts (else on first use).
    eager: bool = False
    connect: ConnectOptions | None = None
    config: Config | None = None
    #: Per-request timeout of an upstream without its own `timeout` (the CLI's --timeout default).
    timeout: float | None = flags.TIMEOUT
    #: With several upstreams (or local content), how long a list request waits for one
    #: upstream's listing (one still starting is left out, and announced when it arrives).
    list_wait: float = 5.0
    #: One line per notable event (an upstream connected, crashed, restarted).
    log: Callable[[str], None] | None = None
    #: Problems the operator should see (an upstream unreachable).
    warn: Callable[[str], None] | None = None
    #: Pin the upstreams' protocol revision (None: negotiate, as the CLI's default).
    protocol: str | None = None
    #: How long a stdio upstream may stay silent on the era probe (`MCP_PROBE_TIMEOUT`).
    probe_timeout: float = flags.PROBE_TIMEOUT
    #: Restart delays of a crashed upstream: first, then doubling up to the last.
    backoff: tuple[float, float] = field(default=(0.5, 30.0))
    #: The tools.yaml files this gateway serves from, outermost first (real paths): a nested
    #: gateway's upstream naming one of them is a cycle (`mcpcli.gateway.nested`).
    chain: tuple[str, ...] = ()
