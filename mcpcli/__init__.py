"""mcpcli: the command-line toolkit for the Model Context Protocol.

The package root stays import-light on purpose: `mcp --help` and shell completion
import it, so nothing here may pull in httpx, rich, keyring, jsonschema or yaml.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
