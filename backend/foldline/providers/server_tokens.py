"""Counting tokens with a local server's own tokenizer, where the server can count.

- llama.cpp: `POST /apply-template` renders the chat exactly as the model will read it
  (`{"prompt": ...}`), `POST /tokenize` counts it (`{"tokens": [...]}`); both in
  tools/server/README.md. Exact, tools included only where the template renders them.
- vLLM: `POST /tokenize` takes the chat request itself and answers `{"count": n}`
  (vllm/entrypoints/openai/serving_tokenization.py).
- llama-cpp-python: `POST /extras/tokenize/count` counts a text (`{"count": n}`,
  llama_cpp/server/app.py) but nothing renders its chat template, so the chat is rendered
  as ChatML first, the template most small models ship (SmolLM2, Qwen, many fine-tunes);
  for other templates the count is off by their few framing tokens per message.

Ollama has no tokenize endpoint; it reports `prompt_eval_count` as the usage of every
answer instead, which is all Foldline needs. Every call is short and any failure means
"cannot count" (None).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2

from foldline.providers.server_facts import fetch_json, server_root

COUNT_TIMEOUT_SECONDS = 3.0


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def render_chatml(messages: Sequence[dict[str, Any]]) -> str:
    """The chat as ChatML, with the generation prompt (`<|im_start|>assistant\\n`) last,
    as llama-cpp-python's `chatml` format and the ChatML GGUF templates render it. Tool
    definitions are not rendered (those templates do not); tool calls are their JSON."""
    pieces: list[str] = []
    for message in messages:
        text = _text_of(message.get("content"))
        calls = message.get("tool_calls")
        if calls:
            text += json.dumps([call.get("function") for call in calls], ensure_ascii=False)
        pieces.append(f"<|im_start|>{message.get('role', 'user')}\n{text}<|im_end|>\n")
    pieces.append("<|im_start|>assistant\n")
    return "".join(pieces)


async def count_chat(
    client: httpx2.AsyncClient,
    base_url: str,
    tokenizer: str,
    model: str,
    messages: Sequence[dict[str, Any]],
    *,
    tools: Sequence[dict[str, Any]] = (),
) -> int | None:
    """The prompt tokens of a chat request (OpenAI `messages`, and the `tools` the
    model's template renders), counted by the server."""
    root = server_root(base_url)
    try:
        if tokenizer == "llama.cpp":
            body: dict[str, Any] = {"messages": list(messages)}
            if tools:
                body["tools"] = list(tools)
            rendered = await fetch_json(client, "POST", f"{root}/apply-template", body)
            prompt = rendered.get("prompt") if isinstance(rendered, dict) else None
            if not isinstance(prompt, str):
                return None
            return await count_text(client, base_url, tokenizer, model, prompt, special=True)
        if tokenizer == "vllm":
            answer = await fetch_json(
                client,
                "POST",
                f"{root}/tokenize",
                {
                    "model": model,
                    "messages": list(messages),
                    "add_generation_prompt": True,
                    **({"tools": list(tools)} if tools else {}),
                },
            )
            return _count(answer)
        if tokenizer == "llama-cpp-python":
            return await count_text(client, base_url, tokenizer, model, render_chatml(messages))
    except (httpx2.HTTPError, ValueError):
        return None
    return None


async def count_text(
    client: httpx2.AsyncClient,
    base_url: str,
    tokenizer: str,
    model: str,
    text: str,
    *,
    special: bool = False,
) -> int | None:
    """The tokens of a plain text, counted by the server (None when it cannot count)."""
    root = server_root(base_url)
    try:
        if tokenizer == "llama.cpp":
            answer = await fetch_json(
                client, "POST", f"{root}/tokenize", {"content": text, "add_special": special}
            )
            tokens = answer.get("tokens") if isinstance(answer, dict) else None
            return len(tokens) if isinstance(tokens, list) else None
        if tokenizer == "vllm":
            answer = await fetch_json(
                client,
                "POST",
                f"{root}/tokenize",
                {"model": model, "prompt": text, "add_special_tokens": special},
            )
            return _count(answer)
        if tokenizer == "llama-cpp-python":
            answer = await fetch_json(
                client, "POST", f"{root}/extras/tokenize/count", {"input": text, "model": model}
            )
            return _count(answer)
    except (httpx2.HTTPError, ValueError):
        return None
    return None


def _count(answer: object) -> int | None:
    value = answer.get("count") if isinstance(answer, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
