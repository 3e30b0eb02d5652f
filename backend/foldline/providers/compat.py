"""OpenAI-compatible local servers (Ollama, LM Studio, llama.cpp, vLLM).

They speak Chat Completions, so the provider is `OpenAIProvider` with a `base_url`. What
they do not share is how they tell their context window, which matters more here than
anywhere: a local server's window is whatever it was loaded with, often far below what
the model supports, and some (Ollama) cut an oversize prompt silently instead of
answering with an error. `discover_context_window` asks each kind of server where it
tells.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

import httpx2

from foldline.providers.base import DEFAULT_TIMEOUT_SECONDS
from foldline.providers.openai import OpenAIProvider
from foldline.providers.server_facts import (
    DISCOVERY_TIMEOUT_SECONDS,
    OLLAMA_DEFAULT_CONTEXT,
    ServerFacts,
    fetch_json,
    probe_server,
    server_root,
)

# Re-exported: onboarding and the tests reach the server helpers through this module.
__all__ = [
    "DISCOVERY_TIMEOUT_SECONDS",
    "OLLAMA_DEFAULT_CONTEXT",
    "LocalServer",
    "OpenAICompatibleProvider",
    "ServerFacts",
    "detect_local_servers",
    "discover_context_window",
    "discover_server",
    "list_server_models",
    "server_root",
]


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA store is most of the cost of a new client (~190 ms here); discovery
    # makes a client per call, so the context is built once and shared.
    return ssl.create_default_context()


def _new_client(timeout: float) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=timeout, verify=_ssl_context())


class OpenAICompatibleProvider(OpenAIProvider):
    """`OpenAIProvider` for a local or self-hosted server at `base_url`."""

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str,
        max_retries: int = 0,
        timeout: float | httpx2.Timeout = DEFAULT_TIMEOUT_SECONDS,
        *,
        stream_usage: bool = True,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            name,
            api_key,
            base_url,
            max_retries,
            timeout,
            compatible=True,
            stream_usage=stream_usage,
            http_client=http_client,
        )


async def discover_server(
    base_url: str,
    model: str,
    http_client: httpx2.AsyncClient | None = None,
    timeout: float = DISCOVERY_TIMEOUT_SECONDS,
) -> ServerFacts | None:
    """What the server at `base_url` says about `model` (`server_facts.probe_server`);
    None when it says nothing or does not answer."""
    client = http_client or _new_client(timeout)
    try:
        return await probe_server(client, base_url, model, timeout)
    finally:
        if http_client is None:
            await client.aclose()


async def discover_context_window(
    base_url: str,
    model: str,
    http_client: httpx2.AsyncClient | None = None,
    timeout: float = DISCOVERY_TIMEOUT_SECONDS,
) -> int | None:
    """The context window the server at `base_url` runs `model` with, or None.

    Tried in order: Ollama (`/api/ps` for a loaded model, then `/api/show`), LM Studio
    (`/api/v0/models/{model}`), llama.cpp (`/props`), vLLM (`/v1/models`). Any failure
    means None: discovery must never stand between the person and their conversation.
    """
    facts = await discover_server(base_url, model, http_client, timeout)
    return facts.context_window if facts is not None else None


@dataclass(frozen=True)
class LocalServer:
    """An OpenAI-compatible server found on this machine, for onboarding."""

    kind: str
    base_url: str
    models: tuple[str, ...]


DEFAULT_LOCAL_SERVERS: tuple[tuple[str, str], ...] = (
    ("ollama", "http://127.0.0.1:11434/v1"),
    ("lmstudio", "http://127.0.0.1:1234/v1"),
    ("llamacpp", "http://127.0.0.1:8080/v1"),
    ("vllm", "http://127.0.0.1:8000/v1"),
)


async def list_server_models(
    base_url: str,
    http_client: httpx2.AsyncClient | None = None,
    timeout: float = DISCOVERY_TIMEOUT_SECONDS,
) -> tuple[str, ...] | None:
    """The model ids `GET {base_url}/models` lists, or None when nothing answers."""
    client = http_client or _new_client(timeout)
    try:
        listing = await asyncio.wait_for(
            fetch_json(client, "GET", f"{base_url.rstrip('/')}/models"), timeout
        )
    except (httpx2.HTTPError, TimeoutError, ValueError):
        return None
    finally:
        if http_client is None:
            await client.aclose()
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        return None
    return tuple(
        str(entry["id"])
        for entry in listing["data"]
        if isinstance(entry, dict) and isinstance(entry.get("id"), str)
    )


async def detect_local_servers(
    candidates: Sequence[tuple[str, str]] = DEFAULT_LOCAL_SERVERS,
    http_client: httpx2.AsyncClient | None = None,
    timeout: float = DISCOVERY_TIMEOUT_SECONDS,
) -> list[LocalServer]:
    """The servers among `candidates` (kind, base_url) that answer, with their models."""
    listings = await asyncio.gather(
        *(list_server_models(url, http_client, timeout) for _, url in candidates)
    )
    return [
        LocalServer(kind=kind, base_url=url, models=models)
        for (kind, url), models in zip(candidates, listings, strict=True)
        if models is not None
    ]
