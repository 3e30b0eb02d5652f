"""What a local server says about itself: its window, slots, tools, vision, tokenizer.

Each kind of OpenAI-compatible server tells in its own place, so each gets a probe:

- llama.cpp's server: `GET /props` holds the context per slot
  (`default_generation_settings.n_ctx`), `total_slots`, `modalities.vision` and, on newer
  builds, `chat_template_caps.supports_tools`; it counts with `POST /tokenize` over the
  prompt `POST /apply-template` renders (tools/server/README.md).
- Ollama: `GET /api/ps` gives a loaded model's `context_length`; `POST /api/show` the
  Modelfile's `num_ctx`, the trained `model_info.<arch>.context_length` and
  `capabilities` (`tools`, `vision`) (docs/api.md).
- LM Studio: `GET /api/v0/models/{id}` gives `loaded_context_length`,
  `max_context_length`, `type` (`vlm` sees images) and `capabilities` (`tool_use`).
- vLLM: `GET /v1/models` lists `max_model_len`; `POST /tokenize` counts a chat request.
- llama-cpp-python's server: no window anywhere (its `/v1/models` entries say only
  `owned_by: "me"`), one model call at a time that a new request interrupts
  (`interrupt_requests`, default true), no streamed `usage`; it counts text with
  `POST /extras/tokenize/count` (llama_cpp/server/app.py, settings.py).

Every probe is short and any failure means "cannot tell": discovery must never stand
between the person and their conversation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import httpx2

ServerKind = Literal["llama.cpp", "llama-cpp-python", "ollama", "lm-studio", "vllm"]
Tokenizer = Literal["llama.cpp", "vllm", "llama-cpp-python"]

DISCOVERY_TIMEOUT_SECONDS = 2.0
"""Discovery runs while the person waits for the settings or the first answer; a local
server answers in milliseconds, so anything slower is treated as "cannot tell"."""

OLLAMA_DEFAULT_CONTEXT = 4096
"""Ollama's context when nothing says otherwise (its smallest VRAM tier). A model that is
not loaded yet will be loaded with the server's default, which the API does not report;
using the model's trained maximum instead would let Ollama silently drop the start of
the prompt, summary included."""


@dataclass(frozen=True)
class ServerFacts:
    """What one server said about one model; None wherever it did not say."""

    server: ServerKind
    context_window: int | None = None
    window_source: str | None = None
    """Where the window was read, as the person can check it ("llama.cpp /props n_ctx")."""
    max_context: int | None = None
    """The most the model could be loaded with (its trained context), when told."""
    slots: int | None = None
    """Requests the server runs at once; 1 means a background summary and a turn queue
    behind each other (or, on llama-cpp-python, interrupt each other)."""
    interrupts: bool = False
    """A new request cuts the running one off instead of waiting (llama-cpp-python)."""
    tools: bool | None = None
    vision: bool | None = None
    tokenizer: Tokenizer | None = None
    """Which counting endpoint the server has, if any."""
    streams_usage: bool = True
    """False for servers that never send `usage` in a stream (llama-cpp-python)."""


def server_root(base_url: str) -> str:
    """`http://host:port/v1` → `http://host:port`: the native APIs live at the root."""
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root


def positive_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


async def fetch_json(
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
            return positive_int(fields[1])
    return None


def _ollama_trained_context(model_info: object) -> int | None:
    if not isinstance(model_info, dict):
        return None
    architecture = model_info.get("general.architecture")
    if isinstance(architecture, str):
        value = positive_int(model_info.get(f"{architecture}.context_length"))
        if value:
            return value
    for key, value in model_info.items():
        if isinstance(key, str) and key.endswith(".context_length"):
            found = positive_int(value)
            if found:
                return found
    return None


def _capability(capabilities: object, name: str) -> bool | None:
    if not isinstance(capabilities, list):
        return None
    return name in capabilities


async def _ollama(client: httpx2.AsyncClient, root: str, model: str) -> ServerFacts | None:
    """A loaded model's real context (`/api/ps`), else `num_ctx`, else a safe default."""
    loaded: int | None = None
    running = await fetch_json(client, "GET", f"{root}/api/ps")
    if isinstance(running, dict):
        for entry in running.get("models") or ():
            if isinstance(entry, dict) and (
                _same_model(entry.get("name"), model) or _same_model(entry.get("model"), model)
            ):
                loaded = positive_int(entry.get("context_length"))
    shown = await fetch_json(client, "POST", f"{root}/api/show", {"model": model})
    if not isinstance(shown, dict) or ("model_info" not in shown and "parameters" not in shown):
        if loaded:
            return ServerFacts("ollama", loaded, "Ollama /api/ps context_length")
        return None
    trained = _ollama_trained_context(shown.get("model_info"))
    configured = _ollama_num_ctx(shown.get("parameters"))
    capabilities = shown.get("capabilities")
    if loaded:
        window, source = loaded, "Ollama /api/ps context_length"
    elif configured:
        window, source = configured, "Ollama /api/show num_ctx"
    elif trained:
        window = min(trained, OLLAMA_DEFAULT_CONTEXT)
        source = "Ollama's default num_ctx (model not loaded)"
    else:
        return None
    return ServerFacts(
        "ollama",
        window,
        source,
        max_context=trained,
        tools=_capability(capabilities, "tools"),
        vision=_capability(capabilities, "vision"),
    )


async def _lmstudio(client: httpx2.AsyncClient, root: str, model: str) -> ServerFacts | None:
    info = await fetch_json(client, "GET", f"{root}/api/v0/models/{quote(model, safe='/')}")
    if not isinstance(info, dict):
        return None
    loaded = positive_int(info.get("loaded_context_length"))
    maximum = positive_int(info.get("max_context_length"))
    if not loaded and not maximum:
        return None
    capabilities = info.get("capabilities")
    return ServerFacts(
        "lm-studio",
        loaded or maximum,
        "LM Studio /api/v0/models loaded_context_length"
        if loaded
        else "LM Studio /api/v0/models max_context_length (model not loaded)",
        max_context=maximum,
        tools=_capability(capabilities, "tool_use"),
        vision=info.get("type") == "vlm" if isinstance(info.get("type"), str) else None,
    )


async def _llamacpp(client: httpx2.AsyncClient, root: str, model: str) -> ServerFacts | None:
    props = await fetch_json(client, "GET", f"{root}/props")
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    window = positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None
    window = window or positive_int(props.get("n_ctx"))
    if not window:
        return None
    modalities = props.get("modalities")
    caps = props.get("chat_template_caps")
    return ServerFacts(
        "llama.cpp",
        window,
        "llama.cpp /props n_ctx",
        slots=positive_int(props.get("total_slots")),
        tools=bool(caps.get("supports_tools")) if isinstance(caps, dict) else None,
        vision=bool(modalities.get("vision")) if isinstance(modalities, dict) else None,
        tokenizer="llama.cpp",
    )


async def _listed(client: httpx2.AsyncClient, root: str, model: str) -> ServerFacts | None:
    """vLLM (`max_model_len` in its model list) or llama-cpp-python (`owned_by: "me"`)."""
    listing = await fetch_json(client, "GET", f"{root}/v1/models")
    if not isinstance(listing, dict):
        return None
    entries = [e for e in listing.get("data") or () if isinstance(e, dict)]
    named = [e for e in entries if e.get("id") == model]
    # vLLM serves one model; a client may call it by another name (--served-model-name).
    entry = named[0] if named else entries[0] if len(entries) == 1 else None
    if entry is None:
        return None
    length = positive_int(entry.get("max_model_len"))
    if length:
        return ServerFacts("vllm", length, "vLLM /v1/models max_model_len", tokenizer="vllm")
    if entry.get("owned_by") == "me":
        # llama_cpp/server/app.py lists every model as owned by "me"; nothing tells its
        # `n_ctx` (default 2048), which the first overflow's error states.
        return ServerFacts(
            "llama-cpp-python",
            slots=1,
            interrupts=True,
            tokenizer="llama-cpp-python",
            streams_usage=False,
        )
    return None


_Probe = Callable[[httpx2.AsyncClient, str, str], Awaitable[ServerFacts | None]]
_PROBES: tuple[_Probe, ...] = (_ollama, _lmstudio, _llamacpp, _listed)


async def _llamacpp_slots(client: httpx2.AsyncClient, root: str) -> int | None:
    """`GET /slots` lists one entry per slot (disabled with `--no-slots`: then /props'
    `total_slots` is all there is)."""
    slots = await fetch_json(client, "GET", f"{root}/slots")
    return len(slots) if isinstance(slots, list) and slots else None


async def probe_server(
    client: httpx2.AsyncClient, base_url: str, model: str, timeout: float
) -> ServerFacts | None:
    """What the server at `base_url` says about `model`, or None (see the module text).

    The kind of server is not known in advance, so each probe is asked in turn; an
    endpoint that is missing answers 404 and costs a millisecond.
    """
    root = server_root(base_url)
    for probe in _PROBES:
        try:
            found = await asyncio.wait_for(probe(client, root, model), timeout)
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            return None  # Nothing listens there; the other probes would fail too.
        except (httpx2.HTTPError, TimeoutError, ValueError):
            continue
        if found is None:
            continue
        if found.server == "llama.cpp" and not found.slots:
            try:
                slots = await asyncio.wait_for(_llamacpp_slots(client, root), timeout)
            except (httpx2.HTTPError, TimeoutError, ValueError):
                slots = None
            if slots:
                found = ServerFacts(**{**found.__dict__, "slots": slots})
        return found
    return None
