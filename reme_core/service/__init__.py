"""The operations layer the server, MCP and the CLI client share."""
