"""The MCP server runtime: every protocol era, over stdio and Streamable HTTP.

See `mcpcli.server.backend` for the interface content providers implement.
"""
