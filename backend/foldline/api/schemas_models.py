"""API types of `/api/models` (camelCase on the wire, like every API body)."""

from __future__ import annotations

from typing import Literal

from foldline.api.schemas import ApiModel, RequestModel
from foldline.core.reasoning import Effort

Lifecycle = Literal["active", "deprecated", "retired"]


class ModelPricesOut(ApiModel):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


class ModelOut(ApiModel):
    id: str
    provider: str
    provider_kind: str
    display_name: str | None
    line: str | None
    """The provider's model line (e.g. "sonnet"), when it says."""
    lifecycle: Lifecycle | None
    """"deprecated" models are offered but marked; retired ones are never listed."""
    context_window: int
    max_output_tokens: int
    known: bool
    """False when the window is a guess: the UI flags it."""
    limit_source: Literal["config", "server", "provider", "catalog", "guess", "default"]
    working_budget: int | None
    """Where this model folds when smaller than its window; null = the window."""
    working_budget_source: Literal["config", "default"] | None
    prices: ModelPricesOut | None
    reasoning_effort: Effort = "off"
    """How much the model reasons unless a conversation says otherwise (`[models."x"]
    reasoning_effort`, else `medium` for a reasoning family, else `off`)."""
    reasons: bool = False
    """The model belongs to a family that reasons: an effort other than off applies."""
    api: Literal["responses", "chat"] = "chat"
    """The OpenAI API the model is reached through (always `chat` for Claude)."""
    window_source: str | None = None
    """With `limit_source` "server": where the local server stated the window
    ("llama.cpp /props n_ctx", "Ollama /api/show num_ctx", "the server's overflow error")."""
    server: str | None = None
    """The kind of local server serving the model, once asked ("llama.cpp", "ollama")."""
    slots: int | None = None
    """Requests the local server runs at once, when it says (1: turns and background
    summaries take turns)."""
    learned_at: str | None = None
    """When the local server was last asked about the model (ISO 8601)."""


class ProviderModelsStatus(ApiModel):
    name: str
    kind: str
    status: Literal["ok", "stale", "no_key"]
    """"stale": the provider could not be asked (or not today); `message` says why."""
    source: Literal["provider", "catalog", "none"]
    fetched_at: str | None
    error: str | None
    message: str | None
    suggested: str | None
    """A current model to suggest (onboarding, an empty default)."""


class ModelsOut(ApiModel):
    catalog_date: str
    providers: list[ProviderModelsStatus]
    models: list[ModelOut]


class ModelsRefresh(RequestModel):
    provider: str | None = None
