"""The fake providers' own tokenizer: deterministic, documented, and unlike any local one.

Foldline counts OpenAI models exactly with tiktoken and estimates other models, then
calibrates the estimate against the usage the provider reports. If the fake providers
reported tiktoken's counts, calibration would never be exercised. So they count with this
tokenizer, whose numbers differ from every local counter (about 20% more than tiktoken
on English prose, far fewer on CJK text) while being simple enough to state exactly:

    text(s)  = ceil(len(s) / 3.3)        len in Unicode code points; text("") = 0
    json(v)  = text(compact JSON of v)    separators (",", ":"), non-ASCII kept

Anthropic Messages request
    total    = 3 (reply priming) + 120 if tools are offered (the hidden tool preamble)
               + sum of the elements below, in wire order: tools, system, messages
    tool     = 12 + text(name) + text(description) + json(input_schema)
    system   = 4 + text(system)                      (absent when the system is empty)
    message  = 5 + sum of its blocks:
               text     text(text)             thinking   text(thinking)
               tool_use 6 + text(name) + json(input)
               tool_result 6 + text(content)   (text blocks joined; each image as below)
               image    Anthropic's formula (w x h / 750 after its downscale) when the
                        image can be read, else 1500
               document (PDF) text(its text) + pages x a page image (Anthropic's
                        formula for a letter page); unreadable 1500
               any other block json(block)

OpenAI Chat Completions request
    total    = 3 (reply priming) + sum of the elements: the tools (one element), messages
    tools    = sum over tools of 10 + text(name) + text(description) + json(parameters)
    message  = 5 + text(role) + text(content) (text parts; each image part by OpenAI's
               tile formula when readable, else 765; each PDF file part text(its text)
               + 765 a page)
               + text(name) if given
               + for each tool call: 6 + text(function.name) + text(function.arguments)

Output (both wires): text(text) + text(reasoning) + for each tool call
6 + text(name) + json(input), at least 1.

Every overhead is a constructor argument, so a test can build a tokenizer that
disagrees more (or less) with the local counters. The per-element breakdown is what the
fake server's prompt-cache simulation uses: cached tokens are a prefix of elements
(blocks on the Anthropic wire, messages on the OpenAI wire).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from foldline.core.tokens.attachments import (
    ANTHROPIC_PDF_PAGE_IMAGE_TOKENS,
    OPENAI_PDF_PAGE_IMAGE_TOKENS,
    anthropic_image_tokens,
    openai_image_tokens,
)
from foldline.providers.base import ModelRequest
from foldline.testing.codec import Wire, encode_request
from foldline.testing.media_checks import image_pixels, pdf_pages_and_text
from foldline.testing.steps import Reply


@dataclass(frozen=True)
class Element:
    """One cacheable unit of a request (Anthropic: a tool, a system or message block;
    OpenAI: the tools, a message).

    `key` identifies the element's content (without cache markers) so two requests that
    share a prefix of elements can be recognised; `breakpoint` is True when the element
    carries an Anthropic `cache_control` marker.
    """

    key: str
    tokens: int
    breakpoint: bool = False


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def _has_cache_control(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value or any(_has_cache_control(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_cache_control(v) for v in value)
    return False


def _key(value: Any) -> str:
    canonical = json.dumps(_without_cache_control(value), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class FakeTokenizer:
    """Counts wire request bodies the way the fake providers bill them (see module doc)."""

    def __init__(
        self,
        *,
        chars_per_token: float = 3.3,
        reply_priming: int = 3,
        message_overhead: int = 5,
        block_overhead: int = 6,
        system_overhead: int = 4,
        anthropic_tool_overhead: int = 12,
        anthropic_tools_preamble: int = 120,
        openai_tool_overhead: int = 10,
        anthropic_image_tokens: int = 1500,
        openai_image_tokens: int = 765,
    ) -> None:
        if chars_per_token <= 0:
            raise ValueError("chars_per_token must be positive")
        self.chars_per_token = chars_per_token
        self._ratio = Fraction(str(chars_per_token)).limit_denominator(1000)
        self.reply_priming = reply_priming
        self.message_overhead = message_overhead
        self.block_overhead = block_overhead
        self.system_overhead = system_overhead
        self.anthropic_tool_overhead = anthropic_tool_overhead
        self.anthropic_tools_preamble = anthropic_tools_preamble
        self.openai_tool_overhead = openai_tool_overhead
        self.anthropic_image_tokens = anthropic_image_tokens
        self.openai_image_tokens = openai_image_tokens

    # --- text ----------------------------------------------------------------------

    def count_text(self, text: str) -> int:
        """ceil(characters / chars_per_token); 0 for the empty string."""
        # Exact rational arithmetic: a float division would make the documented ceiling
        # depend on rounding (3.3 is not representable in binary).
        ratio = self._ratio
        return -((-len(text) * ratio.denominator) // ratio.numerator)

    def count_json(self, value: Any) -> int:
        return self.count_text(_compact_json(value))

    # --- requests --------------------------------------------------------------------

    def count_request(self, body: dict[str, Any], wire: Wire) -> int:
        """Input tokens of a whole request body: fixed overhead + all elements."""
        return self.fixed_tokens(body, wire) + sum(e.tokens for e in self.elements(body, wire))

    def count_model_request(self, request: ModelRequest, wire: Wire) -> int:
        """Input tokens of the body a Foldline provider would send for `request`."""
        return self.count_request(encode_request(request, wire), wire)

    def fixed_tokens(self, body: dict[str, Any], wire: Wire) -> int:
        """The part of the count that belongs to no element (priming, tool preamble)."""
        if wire == "anthropic" and body.get("tools"):
            return self.reply_priming + self.anthropic_tools_preamble
        return self.reply_priming

    def elements(self, body: dict[str, Any], wire: Wire) -> list[Element]:
        """The request's cacheable units in wire order, each with its token count."""
        if wire == "anthropic":
            return self._anthropic_elements(body)
        return self._openai_elements(body)

    def count_output(self, reply: Reply) -> int:
        """Output tokens of a reply (at least 1, as real providers report)."""
        total = self.count_text(reply.text) + self.count_text(reply.reasoning)
        for c in reply.tool_calls:
            total += self.block_overhead + self.count_text(c.name) + self.count_json(c.input)
        return max(total, 1)

    # --- Anthropic -------------------------------------------------------------------

    def _anthropic_elements(self, body: dict[str, Any]) -> list[Element]:
        """One element per cacheable block: each tool, each system block, each content
        block of each message (a message's overhead is counted on its first block).

        Anthropic caches at block granularity: a breakpoint marks a block, and a cache
        lookup walks back block by block, so the simulation needs blocks, not messages.
        A top-level `cache_control` marks the last block, as the API applies it.
        """
        out: list[Element] = []
        for tool in body.get("tools") or []:
            tokens = (
                self.anthropic_tool_overhead
                + self.count_text(str(tool.get("name", "")))
                + self.count_text(str(tool.get("description", "")))
                + self.count_json(tool.get("input_schema", {}))
            )
            out.append(Element(_key(["tool", tool]), tokens, _has_cache_control(tool)))
        system = body.get("system")
        if isinstance(system, str) and system:
            tokens = self.system_overhead + self.count_text(system)
            out.append(Element(_key(["system", system]), tokens))
        elif isinstance(system, list):
            for i, block in enumerate(b for b in system if isinstance(b, dict)):
                tokens = self.count_text(str(block.get("text", "")))
                tokens += self.system_overhead if i == 0 else 0
                out.append(Element(_key(["system", i, block]), tokens, _has_cache_control(block)))
        for message in body.get("messages") or []:
            content = message.get("content", "")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            role = message.get("role")
            for i, block in enumerate(blocks):
                tokens = self._anthropic_block(block) + (self.message_overhead if i == 0 else 0)
                # The role and "first block of a message" belong to the identity: the same
                # block opening a new turn is a different prefix than inside one.
                key = _key(["block", role, i == 0, block])
                out.append(Element(key, tokens, _has_cache_control(block)))
        if body.get("cache_control") and out:
            out[-1] = Element(out[-1].key, out[-1].tokens, True)
        return out

    def _anthropic_block(self, block: dict[str, Any]) -> int:
        kind = block.get("type")
        if kind == "text":
            return self.count_text(str(block.get("text", "")))
        if kind == "thinking":
            return self.count_text(str(block.get("thinking", "")))
        if kind == "redacted_thinking":
            return 0
        if kind == "tool_use":
            return (
                self.block_overhead
                + self.count_text(str(block.get("name", "")))
                + self.count_json(block.get("input", {}))
            )
        if kind == "tool_result":
            content = block.get("content", "")
            if isinstance(content, str):
                return self.block_overhead + self.count_text(content)
            return self.block_overhead + sum(self._anthropic_block(b) for b in content)
        source = block.get("source") or {}
        if kind == "image":
            # A readable image is billed by Anthropic's formula, as the API does; one
            # whose size cannot be read (a placeholder in a test) by the fixed cost.
            pixels = image_pixels(str(source.get("data", "")))
            return anthropic_image_tokens(*pixels) if pixels else self.anthropic_image_tokens
        if kind == "document":
            if source.get("type") == "text":
                return self.count_text(str(source.get("data", "")))
            pdf = pdf_pages_and_text(str(source.get("data", "")))
            if pdf is None:
                return self.anthropic_image_tokens
            pages, text = pdf
            return self.count_text(text) + pages * ANTHROPIC_PDF_PAGE_IMAGE_TOKENS
        return self.count_json(block)

    # --- OpenAI ----------------------------------------------------------------------

    def _openai_elements(self, body: dict[str, Any]) -> list[Element]:
        out: list[Element] = []
        tools: Sequence[dict[str, Any]] = body.get("tools") or []
        if tools:
            tokens = 0
            for tool in tools:
                function = tool.get("function") or {}
                tokens += (
                    self.openai_tool_overhead
                    + self.count_text(str(function.get("name", "")))
                    + self.count_text(str(function.get("description", "")))
                    + self.count_json(function.get("parameters", {}))
                )
            out.append(Element(_key(["tools", tools]), tokens))
        for message in body.get("messages") or []:
            out.append(Element(_key(["message", message]), self._openai_message(message)))
        return out

    def _openai_image(self, part: dict[str, Any]) -> int:
        """By OpenAI's tile formula when the image can be read, else the fixed cost."""
        url = part.get("image_url")
        url = str(url.get("url", "") if isinstance(url, dict) else url or "")
        pixels = image_pixels(url.partition(";base64,")[2])
        return openai_image_tokens(*pixels) if pixels else self.openai_image_tokens

    def _openai_file(self, part: dict[str, Any]) -> int:
        """A PDF: its text and an image of every page, as OpenAI bills file inputs."""
        data = str((part.get("file") or {}).get("file_data", "")).partition(";base64,")[2]
        pdf = pdf_pages_and_text(data)
        if pdf is None:
            return self.count_json(part)
        pages, text = pdf
        return self.count_text(text) + pages * OPENAI_PDF_PAGE_IMAGE_TOKENS

    def _openai_message(self, message: dict[str, Any]) -> int:
        tokens = self.message_overhead + self.count_text(str(message.get("role", "")))
        content = message.get("content")
        if isinstance(content, str):
            tokens += self.count_text(content)
        elif isinstance(content, list):
            for part in content:
                if part.get("type") == "text":
                    tokens += self.count_text(str(part.get("text", "")))
                elif part.get("type") in ("image_url", "input_image"):
                    tokens += self._openai_image(part)
                elif part.get("type") == "file":
                    tokens += self._openai_file(part)
                else:
                    tokens += self.count_json(part)
        if message.get("name"):
            tokens += self.count_text(str(message["name"]))
        for tool_call in message.get("tool_calls") or []:
            function = tool_call.get("function") or {}
            tokens += (
                self.block_overhead
                + self.count_text(str(function.get("name", "")))
                + self.count_text(str(function.get("arguments", "")))
            )
        return tokens
