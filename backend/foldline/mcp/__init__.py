"""MCP (Model Context Protocol) servers as tool sources, through the official `mcp` SDK.

- `settings`: a server added in Settings checked, masking, and the import of Claude
  Desktop's `mcpServers` object (pure values; no SDK). The `[mcp_servers.NAME]` tables
  themselves are `foldline.config_mcp`, below the configuration.
- `naming`: the `SERVER__TOOL` names offered to the model, collisions resolved visibly.
- `connection`: one server's SDK session kept open in a task of its own.
- `results`: an MCP tool result as Foldline's tool outcome (text, structure, images).
- `approval`: calls waiting for the person's decision.
- `oauth`: sign-in to remote servers (keychain tokens, the loopback redirect).
- `elicitation`: a server's questions waiting for the person; the form's rules.
- `interaction`: which running call a question belongs to; progress events.
- `manager`: starts servers when first needed, offers their tools (and the built-in
  `mcp_read_resource`), signs in, restarts, stops.

The SDK is imported only by `connection` and `oauth`, and only when a server is first
started (or Settings asks whether one is signed in).
"""
