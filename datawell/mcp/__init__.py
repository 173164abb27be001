"""The MCP surface: Datawell's datasets and agents as tools and resources for MCP clients,
served over streamable HTTP at `/api/v1/mcp` (see docs/mcp.md)."""
