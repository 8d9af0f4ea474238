"""`python -m mcpcli` runs the same entry point as the `mcp` command."""

from mcpcli.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
