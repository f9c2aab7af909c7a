"""`reme serve`: one process, one port: HTTP API, MCP, watcher and scheduler."""
