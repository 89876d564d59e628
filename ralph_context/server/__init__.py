"""The MCP server: tools, resources and prompts over the engine, thin adapters only."""
