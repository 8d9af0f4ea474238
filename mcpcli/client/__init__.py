"""The MCP client: `Client` (anyio), what it is given (`ClientOptions`, `ClientFeatures`),
its subscriptions and the tasks it follows. What goes on the wire is decided by the protocol
core (`mcpcli.core`); this package drives it over a transport."""

from mcpcli.client.client import ROOTS_SETTLE, Client, caused_by
from mcpcli.client.options import ClientFeatures, ClientOptions

__all__ = ["ROOTS_SETTLE", "Client", "ClientFeatures", "ClientOptions", "caused_by"]
