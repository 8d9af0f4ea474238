"""The JSON-RPC engine on anyio, which both sides run on: `peer` (one symmetric `Peer`
over a transport's stream pair: ids, correlation, timeouts that progress restarts,
cancellation both ways, dispatch of what arrives; its incoming messages handled as
`mcpcli.jobs`). What a request looks like and when it has waited too long is the protocol
core's (`mcpcli.core.requests`)."""
