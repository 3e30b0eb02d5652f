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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx2

from foldline.providers.base import DEFAULT_TIMEOUT_SECONDS
from foldline.providers.openai import OpenAIProvider

DISCOVERY_TIMEOUT_SECONDS = 2.0
"""Discovery runs while the person waits for the settings or the first answer; a local
server answers in milliseconds, so anything slower is treated as "cannot tell"."""

OLLAMA_DEFAULT_CONTEXT = 4096
"""Ollama's context when nothing says otherwise (its smallest VRAM tier). A model that is
not loaded yet will be loaded with the server's default, which the API does not report;
using the model's trained maximum instead would let Ollama silently drop the start of
the prompt, summary included."""


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


def server_root(base_url: str) -> str:
    """`http://host:port/v1` → `http://host:port`: the native APIs live at the root."""
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root


def _positive_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


def _same_model(candidate: object, model: str) -> bool:
    # Ollama names carry an implicit ":latest" tag.
    if not isinstance(candidate, str):
        return False
    return candidate == model or candidate == f"{model}:latest" or f"{candidate}:latest" == model


def _ollama_num_ctx(parameters: object) -> int | None:
    """`num_ctx` from the Modelfile parameters text (`"num_ctx 8192\\nstop ..."`)."""
    if not isinstance(parameters, str):
        return None
    for line in parameters.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "num_ctx":
            return _positive_int(fields[1])
    return None


def _ollama_trained_context(model_info: object) -> int | None:
    if not isinstance(model_info, dict):
        return None
    architecture = model_info.get("general.architecture")
    if isinstance(architecture, str):
        value = _positive_int(model_info.get(f"{architecture}.context_length"))
        if value:
            return value
    for key, value in model_info.items():
        if isinstance(key, str) and key.endswith(".context_length"):
            found = _positive_int(value)
            if found:
                return found
    return None


async def _json(
    client: httpx2.AsyncClient, method: str, url: str, body: dict[str, Any] | None = None
) -> Any:
    """The JSON answer of a probe, or None when the server does not have that endpoint."""
    response = await client.request(method, url, json=body)
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


async def _ollama(client: httpx2.AsyncClient, root: str, model: str) -> int | None:
    """A loaded model's real context (`/api/ps`), else `num_ctx`, else a safe default."""
    running = await _json(client, "GET", f"{root}/api/ps")
    if isinstance(running, dict):
        for entry in running.get("models") or ():
            if isinstance(entry, dict) and (
                _same_model(entry.get("name"), model) or _same_model(entry.get("model"), model)
            ):
                loaded = _positive_int(entry.get("context_length"))
                if loaded:
                    return loaded
    shown = await _json(client, "POST", f"{root}/api/show", {"model": model})
    if not isinstance(shown, dict) or ("model_info" not in shown and "parameters" not in shown):
        return None
    configured = _ollama_num_ctx(shown.get("parameters"))
    if configured:
        return configured
    trained = _ollama_trained_context(shown.get("model_info"))
    if trained:
        return min(trained, OLLAMA_DEFAULT_CONTEXT)
    return None


async def _lmstudio(client: httpx2.AsyncClient, root: str, model: str) -> int | None:
    info = await _json(client, "GET", f"{root}/api/v0/models/{quote(model, safe='/')}")
    if not isinstance(info, dict):
        return None
    return _positive_int(info.get("loaded_context_length")) or _positive_int(
        info.get("max_context_length")
    )


async def _llamacpp(client: httpx2.AsyncClient, root: str, model: str) -> int | None:
    props = await _json(client, "GET", f"{root}/props")
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict):
        value = _positive_int(settings.get("n_ctx"))
        if value:
            return value
    return _positive_int(props.get("n_ctx"))


async def _vllm(client: httpx2.AsyncClient, root: str, model: str) -> int | None:
    listing = await _json(client, "GET", f"{root}/v1/models")
    if not isinstance(listing, dict):
        return None
    entries = [e for e in listing.get("data") or () if isinstance(e, dict)]
    for entry in entries:
        if entry.get("id") == model:
            return _positive_int(entry.get("max_model_len"))
    if len(entries) == 1:
        # vLLM serves one model; a client may call it by another name (--served-model-name).
        return _positive_int(entries[0].get("max_model_len"))
    return None


_Probe = Callable[[httpx2.AsyncClient, str, str], Awaitable[int | None]]
_PROBES: tuple[_Probe, ...] = (_ollama, _lmstudio, _llamacpp, _vllm)


async def discover_context_window(
    base_url: str,
    model: str,
    http_client: httpx2.AsyncClient | None = None,
    timeout: float = DISCOVERY_TIMEOUT_SECONDS,
) -> int | None:
    """The context window the server at `base_url` runs `model` with, or None.

    Tried in order: Ollama (`/api/ps` for a loaded model, then `/api/show`), LM Studio
    (`/api/v0/models/{model}`), llama.cpp (`/props`), vLLM (`/v1/models`). The kind of
    server is not known in advance, so each is asked in turn; an endpoint that is
    missing answers 404 and costs a millisecond. Any failure means None: discovery
    must never stand between the person and their conversation.
    """
    root = server_root(base_url)
    client = http_client or _new_client(timeout)
    try:
        for probe in _PROBES:
            try:
                found = await asyncio.wait_for(probe(client, root, model), timeout)
            except (httpx2.ConnectError, httpx2.ConnectTimeout):
                return None  # Nothing listens there; the other probes would fail too.
            except (httpx2.HTTPError, TimeoutError, ValueError):
                continue
            if found:
                return found
        return None
    finally:
        if http_client is None:
            await client.aclose()


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
            _json(client, "GET", f"{base_url.rstrip('/')}/models"), timeout
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
