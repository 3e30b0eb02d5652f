"""MCP (Model Context Protocol) servers as tool sources, through the official `mcp` SDK.

- `settings`: a server added in Settings checked, masking, and the import of Claude
  Desktop's `mcpServers` object (pure values; no SDK). The `[mcp_servers.NAME]` tables
  themselves are `foldline.config_mcp`, below the configuration.
- `naming`: the `SERVER__TOOL` names offered to the model, collisions resolved visibly.
- `connection`: one server's SDK session kept open in a task of its own.
- `results`: an MCP tool result as Foldline's tool outcome (text, structure, images).
- `approval`: calls waiting for the person's decision.
- `manager`: starts servers when first needed, offers their tools, restarts, stops.

The SDK is imported only by `connection`, when a server is first started.
"""
