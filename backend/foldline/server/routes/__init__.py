"""One router per resource of the HTTP API (see docs/api.md)."""
