"""Model providers: Anthropic, OpenAI and OpenAI-compatible servers, on the official SDKs."""
