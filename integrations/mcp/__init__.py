"""The MCP server (Streamable HTTP at /mcp): spec §4's agent tools and the namespace store,
as thin adapters over the services the REST API calls (docs/adr/0041)."""
