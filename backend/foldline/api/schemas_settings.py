"""The settings API's bodies (`/api/settings`, its connection test and local-server
detection), in camelCase like every other API type."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, create_model

from foldline.api.schemas import ApiModel, RequestModel
from foldline.core.reasoning import Effort, ThinkingForm
from foldline.core.settings import CompactionSettings


class SettingsUpdate(RequestModel):
    """A partial change to the settings, in the shape of `GET /api/settings`.

    `providers.NAME` / `models.NAME` set to null remove that entry. `keys` maps a
    provider name to a new API key (stored in the key store) or null (key removed).
    """

    defaults: dict[str, Any] | None = None
    providers: dict[str, dict[str, Any] | None] | None = None
    models: dict[str, dict[str, Any] | None] | None = None
    compaction: dict[str, Any] | None = None
    keys: dict[str, Annotated[str, Field(max_length=4096)] | None] | None = None


class ProviderSettingsOut(ApiModel):
    """One provider as Settings shows it: never its key, only a mask."""

    kind: str
    base_url: str | None
    base_url_source: Literal["env", "config"] | None
    has_key: bool
    masked_key: str | None
    key_source: Literal["env", "keyring", "file", "config"] | None
    key_env: str | None
    """The environment variable read for this provider's key, if any."""


class ModelSettingsOut(ApiModel):
    """One `[models."name"]` table of config.toml (null: not set there)."""

    provider: str | None
    context_window: int | None
    max_output_tokens: int | None
    input_limit: int | None
    input_price: float | None
    output_price: float | None
    cache_read_price: float | None
    cache_write_price: float | None
    vision: bool | None
    working_budget: int | None
    reasoning_effort: Effort | None = None
    thinking: ThinkingForm | None = None
    temperature: float | None = None
    api: Literal["responses", "chat"] | None = None


# The `[compaction]` table in camelCase, field for field the engine's settings: derived
# from them, so a knob added there is typed here (and in the UI's typedefs) at once.
_COMPACTION_FIELDS: dict[str, Any] = {
    name: (field.annotation, ...) for name, field in CompactionSettings.model_fields.items()
}
CompactionSettingsOut: type[ApiModel] = create_model(
    "CompactionSettingsOut",
    __base__=ApiModel,
    __doc__="The `[compaction]` settings of config.toml, every knob with its value.",
    **_COMPACTION_FIELDS,
)


class DefaultsOut(ApiModel):
    model: str | None


class KeyStorageOut(ApiModel):
    backend: Literal["keyring", "file"]
    warning: str | None
    """Set when keys are stored unencrypted: Settings shows it."""


class SettingsOut(ApiModel):
    """`GET /api/settings`: what the UI may see of config.toml and the key store."""

    data_dir: str | None
    defaults: DefaultsOut
    providers: dict[str, ProviderSettingsOut]
    models: dict[str, ModelSettingsOut]
    compaction: CompactionSettingsOut  # type: ignore[valid-type]
    key_storage: KeyStorageOut | None


class ConnectionTest(RequestModel):
    provider: Annotated[str, Field(min_length=1, max_length=200)]
    model: Annotated[str, Field(min_length=1, max_length=200)] | None = None


class ConnectionTestResult(ApiModel):
    ok: bool
    provider: str
    model: str | None
    latency_ms: int | None = None
    error_code: str | None = None
    """`auth`, `unavailable`, `rate_limited`, `bad_request`, `timeout`, `no_model`, ..."""
    message: str | None = None


class LocalServer(ApiModel):
    name: str
    label: str
    base_url: str
    available: bool
    models: list[str]


class LocalServers(ApiModel):
    servers: list[LocalServer]
