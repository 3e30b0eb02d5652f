"""`foldline count-tokens --model MODEL [FILE|-]`: the input tokens of a request body.

The body is what would be POSTed to the provider:
- for OpenAI-tokenized models, a Chat Completions body `{messages, tools?, tool_choice?}`
  (the legacy `functions` / `function_call` are accepted too); the count is exact unless
  the body holds images, audio or files;
- for Claude models (claude-*), a Messages body `{system?, messages, tools?, tool_choice?}`;
  the count is an estimate.

- for any other model served by an OpenAI-compatible provider of config.toml (a local
  server), a Chat Completions body, counted by the server itself where it can count
  (llama.cpp, vLLM, llama-cpp-python): exact for llama.cpp and vLLM.

The count is printed on stdout as a bare integer. When it is not exact, the word
"estimate" is printed on stderr. Bad input (unreadable file, malformed JSON, a body of
the wrong shape, a model that is neither OpenAI-tokenized nor Claude) gives a one-line
error on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from foldline.core.tokens import (
    count_openai_chat_payload,
    estimate_anthropic_payload,
    openai_payload_is_exact,
)
from foldline.tokenizers import (
    ESTIMATE_BASE_ENCODING,
    encoding_name_for_model,
    get_encoder,
    is_anthropic_model,
)

USAGE_ERROR = 2

_OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_ANTHROPIC_ROLES = frozenset({"user", "assistant"})


class BodyError(ValueError):
    """The request body cannot be counted; the message is shown to the user."""


def _read_body(file: str) -> Any:
    try:
        if file == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(file, "rb") as f:
                raw = f.read()
    except OSError as error:
        raise BodyError(f"cannot read {file}: {error.strerror or error}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BodyError("the request body is not UTF-8") from None
    except json.JSONDecodeError as error:
        raise BodyError(f"malformed JSON: {error.msg} at line {error.lineno}") from None


def _list_of_objects(body: Mapping[str, Any], key: str, *, required: bool) -> list[Any]:
    value = body.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise BodyError(f"`{key}` must be a list of objects")
    return value


def _openai_body(body: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    """Messages, tools and tool choice of a Chat Completions body, or BodyError."""
    if not isinstance(body, Mapping):
        raise BodyError("expected a Chat Completions body: an object with `messages`")
    messages = _list_of_objects(body, "messages", required=True)
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in _OPENAI_ROLES:
            raise BodyError(f"messages[{index}] has role {role!r}, not a Chat Completions role")
        content = message.get("content")
        if not (content is None or isinstance(content, str | list)):
            raise BodyError(f"messages[{index}].content must be a string, a list or null")
    tools = _list_of_objects(body, "tools", required=False) or _list_of_objects(
        body, "functions", required=False
    )
    tool_choice = body.get("tool_choice", body.get("function_call"))
    return messages, tools, tool_choice


def _anthropic_body(body: Any) -> dict[str, Any]:
    """The Messages body, checked for shape, or BodyError."""
    if not isinstance(body, Mapping):
        raise BodyError("expected a Messages body: an object with `messages`")
    messages = _list_of_objects(body, "messages", required=True)
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in _ANTHROPIC_ROLES:
            raise BodyError(
                f"messages[{index}] has role {role!r}; the Messages API takes only user and "
                "assistant (the system prompt goes in `system`)"
            )
        content = message.get("content")
        if not isinstance(content, str | list):
            raise BodyError(f"messages[{index}].content must be a string or a list of blocks")
    system = body.get("system")
    if not (system is None or isinstance(system, str | list)):
        raise BodyError("`system` must be a string or a list of blocks")
    for index, tool in enumerate(_list_of_objects(body, "tools", required=False)):
        if not isinstance(tool.get("name"), str):
            raise BodyError(f"tools[{index}] has no name")
    return dict(body)


def count_body(model: str, body: Any) -> tuple[int, bool]:
    """The input tokens of `body` for `model` and whether the count is exact.

    Raises BodyError for a body of the wrong shape or a model this command cannot count.
    """
    encoding = encoding_name_for_model(model)
    if encoding is not None:
        messages, tools, tool_choice = _openai_body(body)
        count = count_openai_chat_payload(
            get_encoder(encoding), messages, tools, tool_choice=tool_choice
        )
        return count, openai_payload_is_exact(messages, tools)
    if is_anthropic_model(model):
        payload = _anthropic_body(body)
        encoder = get_encoder(ESTIMATE_BASE_ENCODING)
        return estimate_anthropic_payload(payload, lambda text: len(encoder.encode(text))), False
    local = count_with_local_server(model, body)
    if local is not None:
        return local
    raise BodyError(
        f"unknown model {model!r}: expected an OpenAI-tokenized model (gpt-4o, gpt-5, o3, ...), "
        "a Claude model (claude-*) or a model of a local server that counts tokens"
    )


def count_with_local_server(
    model: str, body: Any, data_dir: str | None = None
) -> tuple[int, bool] | None:
    """The count the local server of `model` gives for a Chat Completions `body`, with
    whether it is exact; None when no OpenAI-compatible provider serves the model.
    Raises BodyError when the server is there but cannot count."""
    import asyncio

    import httpx2

    from foldline.config import ConfigError, effective_base_url, load_config, provider_config
    from foldline.paths import resolve_data_dir
    from foldline.providers.registry import provider_name_for_model
    from foldline.providers.server_facts import probe_server
    from foldline.providers.server_tokens import count_chat

    try:
        config = load_config(resolve_data_dir(data_dir))
        provider = provider_name_for_model(config, model)
    except (ConfigError, OSError):
        return None
    base_url, _ = effective_base_url(config, provider)
    if provider_config(config, provider).kind != "openai-compatible" or not base_url:
        return None
    messages, tools, _ = _openai_body(body)

    async def ask() -> tuple[int | None, str | None]:
        async with httpx2.AsyncClient(timeout=10.0) as client:
            facts = await probe_server(client, base_url, model, 5.0)
            if facts is None or facts.tokenizer is None:
                return None, facts.server if facts else None
            count = await count_chat(
                client, base_url, facts.tokenizer, model, messages, tools=tools
            )
            return count, facts.tokenizer

    try:
        count, tokenizer = asyncio.run(ask())
    except (httpx2.HTTPError, OSError) as error:
        raise BodyError(
            f"the server of {model!r} at {base_url} did not answer ({error})"
        ) from error
    if count is None:
        raise BodyError(
            f"the server of {model!r} at {base_url} ({tokenizer or 'unknown kind'}) cannot "
            "count tokens"
        )
    # llama-cpp-python renders no template of its own: its count is of the ChatML form.
    return count, tokenizer in ("llama.cpp", "vllm")


def run_count_tokens(args: argparse.Namespace) -> int:
    """Entry point of `foldline count-tokens`; returns the process exit code."""
    try:
        count, exact = count_body(args.model, _read_body(args.file))
    except BodyError as error:
        print(f"foldline count-tokens: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except (TypeError, AttributeError, KeyError, ValueError) as error:
        # A body that passed the shape checks but holds values of unexpected types deep
        # inside: still a usage error, reported in one line rather than a traceback.
        print(f"foldline count-tokens: error: cannot count this body ({error})", file=sys.stderr)
        return USAGE_ERROR
    print(count)
    if not exact:
        print("estimate", file=sys.stderr)
    return 0
