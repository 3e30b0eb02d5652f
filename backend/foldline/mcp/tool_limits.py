"""Limits on what MCP servers put in every request: tool descriptions, schemas, and the
tokens all their tools take together.

Every offered tool is sent with every model call, in every conversation. One tool with a
ten-megabyte description, or a server offering ten thousand tools, would make every
request overflow the model's window; so a description is cut, a tool whose schema is
too large or too deep is left out, and once the MCP tools together reach their share of
the input budget, the rest are left out. What is left out is said, naming the server,
in Settings and once in the chat.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from foldline.core.json_values import json_problem, without_lone_surrogates
from foldline.core.messages import ToolSpec

MAX_DESCRIPTION_CHARS = 4_000
"""A tool's description beyond this is cut (the longest real ones are about 2,000)."""
MAX_SCHEMA_CHARS = 20_000
"""A tool whose input schema, as JSON, is longer than this is left out."""
TOOLS_BUDGET_SHARE = 0.25
"""All MCP tools together may take at most this share of the input budget."""
UNLIMITED_TOOLS_TOKENS = 50_000
"""Their cap when the model's window is unlimited or unknown."""
CHARS_PER_TOKEN = 4
"""A tool's size in tokens is estimated from its characters: the cap is a guard against
runaways, not a count that must be exact."""

CUT_MARK = " […description cut by Foldline]"


def tools_token_cap(input_budget: int | None) -> int:
    if input_budget is None:
        return UNLIMITED_TOOLS_TOKENS
    return max(int(input_budget * TOOLS_BUDGET_SHARE), 1)


def spec_tokens(spec: ToolSpec) -> int:
    size = len(spec.name) + len(spec.description) + len(json.dumps(spec.input_schema))
    return size // CHARS_PER_TOKEN + 1


@dataclass(frozen=True)
class LimitedTools:
    kept: list[int]
    """Positions (in the order given) of the tools offered."""
    specs: dict[int, ToolSpec]
    """The offered spec of each kept tool (its description cut when too long)."""
    notes: dict[str, str]
    """Per server: what was cut or left out, as the person reads it."""


def limit_tools(offers: Sequence[tuple[str, ToolSpec]], cap_tokens: int) -> LimitedTools:
    """Apply the limits to `(server, spec)` pairs in the order they are offered: earlier
    servers (config order) keep their tools first."""
    kept: list[int] = []
    specs: dict[int, ToolSpec] = {}
    cut: dict[str, int] = {}
    too_large: dict[str, list[str]] = {}
    over_cap: dict[str, int] = {}
    used = 0
    for position, (server, spec) in enumerate(offers):
        # Checked without recursion first: a schema nested past the JSON encoder's limit
        # must not break the listing.
        problem = json_problem(spec.input_schema, max_chars=MAX_SCHEMA_CHARS)
        if problem or len(json.dumps(spec.input_schema)) > MAX_SCHEMA_CHARS:
            too_large.setdefault(server, []).append(spec.name)
            continue
        description = without_lone_surrogates(spec.description)
        if len(description) > MAX_DESCRIPTION_CHARS:
            cut[server] = cut.get(server, 0) + 1
            description = description[:MAX_DESCRIPTION_CHARS] + CUT_MARK
        if description != spec.description:
            spec = ToolSpec(name=spec.name, description=description, input_schema=spec.input_schema)
        tokens = spec_tokens(spec)
        if used + tokens > cap_tokens:
            over_cap[server] = over_cap.get(server, 0) + 1
            continue
        used += tokens
        kept.append(position)
        specs[position] = spec
    notes: dict[str, str] = {}
    for server in dict.fromkeys([*cut, *too_large, *over_cap]):
        parts = []
        if server in cut:
            parts.append(
                f"{cut[server]} tool descriptions longer than {MAX_DESCRIPTION_CHARS:,} "
                "characters were cut"
            )
        if server in too_large:
            names = ", ".join(too_large[server][:5])
            more = len(too_large[server]) - 5
            parts.append(
                f"{len(too_large[server])} tools with an input schema too large or too deep "
                f"are not offered ({names}{f' and {more} more' if more > 0 else ''})"
            )
        if server in over_cap:
            parts.append(
                f"{over_cap[server]} tools are not offered: the MCP tools together would "
                f"take more than {cap_tokens:,} tokens of every request "
                f"({TOOLS_BUDGET_SHARE:.0%} of what the model can read)"
            )
        notes[server] = f"The MCP server {server}: " + "; ".join(parts) + "."
    return LimitedTools(kept=kept, specs=specs, notes=notes)
