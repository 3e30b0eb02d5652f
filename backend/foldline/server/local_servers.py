"""Finding a local model server (Ollama, LM Studio) for the onboarding screen.

Only loopback addresses are probed, each with a short timeout, and only when the UI
asks; the answer says which servers answered and the models they list.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx2

from foldline.api.schemas_settings import LocalServer

# A port with nothing behind it is refused at once, so the limit only matters for a
# server that is there but slow to answer, as one is on a busy machine: 0.75 s missed the
# local server on a loaded machine, where onboarding then offered no local choice.
PROBE_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class LocalServerTarget:
    name: str
    """`ollama` or `lmstudio`: also the suggested provider name in config.toml."""
    label: str
    root_url: str
    """The server's root, e.g. `http://127.0.0.1:11434`."""
    models_path: str
    """Path that lists the models (Ollama: `/api/tags`; OpenAI-compatible: `/v1/models`)."""

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL to put in `[providers.NAME] base_url`."""
        return f"{self.root_url}/v1"


DEFAULT_TARGETS: tuple[LocalServerTarget, ...] = (
    LocalServerTarget("ollama", "Ollama", "http://127.0.0.1:11434", "/api/tags"),
    LocalServerTarget("lmstudio", "LM Studio", "http://127.0.0.1:1234", "/v1/models"),
)


def _model_names(body: Any) -> list[str]:
    """Model ids from Ollama's `{"models": [{"name"}]}` or OpenAI's `{"data": [{"id"}]}`."""
    if not isinstance(body, dict):
        return []
    names: list[str] = []
    for entry in body.get("models") or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            names.append(entry["name"])
    for entry in body.get("data") or []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            names.append(entry["id"])
    return names


async def probe(client: httpx2.AsyncClient, target: LocalServerTarget) -> LocalServer:
    found = LocalServer(
        name=target.name,
        label=target.label,
        base_url=target.base_url,
        available=False,
        models=[],
    )
    try:
        reply = await client.get(target.root_url + target.models_path)
    except (httpx2.HTTPError, OSError):
        return found
    if reply.status_code != 200:
        return found
    try:
        models = _model_names(reply.json())
    except ValueError:
        return found
    return found.model_copy(update={"available": True, "models": models})


async def detect_local_servers(
    targets: tuple[LocalServerTarget, ...] = DEFAULT_TARGETS,
    timeout: float = PROBE_TIMEOUT_SECONDS,
) -> list[LocalServer]:
    # trust_env=False: an http_proxy setting must not send loopback probes elsewhere.
    async with httpx2.AsyncClient(timeout=timeout, trust_env=False) as client:
        return list(await asyncio.gather(*(probe(client, target) for target in targets)))
