"""The configuration as the Settings UI sees it and changes it.

`public_settings` shows every value with where it came from (the file, the environment
or the key store) and never a key, only its mask; `apply_settings_patch` applies a change
the UI sends (camelCase) with the same checks `parse_config` makes, so a patch can never
store what a hand-written file would be refused for. Saving the result is
`foldline.config_toml.save_config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_snake

from foldline.api.schemas_settings import (
    CompactionSettingsOut,
    DefaultsOut,
    KeyStorageOut,
    ModelSettingsOut,
    ProviderSettingsOut,
    SettingsOut,
)
from foldline.config import (
    IMPLICIT_PROVIDERS,
    AppConfig,
    ConfigError,
    DefaultsTable,
    ModelConfig,
    ProviderConfig,
    effective_base_url,
    find_provider_key,
    first_error,
    key_env_var,
)
from foldline.core.settings import CompactionSettings
from foldline.secrets import key_storage_status, mask_key

_Model = TypeVar("_Model", bound=BaseModel)


def public_settings(config: AppConfig) -> SettingsOut:
    """The settings as the UI may see them: never a key, only its mask."""
    providers: dict[str, ProviderSettingsOut] = {}
    for name, provider in config.providers.items():
        base_url, base_url_source = effective_base_url(config, name)
        found = find_provider_key(config, name)
        providers[name] = ProviderSettingsOut(
            kind=provider.kind,
            base_url=base_url,
            base_url_source=base_url_source,
            has_key=found is not None,
            masked_key=mask_key(found[0]) if found else None,
            key_source=found[1] if found else None,
            key_env=key_env_var(config, name),
        )
    return SettingsOut(
        data_dir=str(config.data_dir) if config.data_dir else None,
        defaults=DefaultsOut(model=config.default_model),
        providers=providers,
        models={
            name: ModelSettingsOut.model_validate(model.model_dump())
            for name, model in config.models.items()
        },
        compaction=CompactionSettingsOut.model_validate(config.compaction.model_dump()),
        key_storage=(
            KeyStorageOut.model_validate(key_storage_status(config.data_dir))
            if config.data_dir
            else None
        ),
    )


def _validated(model: type[_Model], data: Mapping[str, Any], section: str) -> _Model:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        _, message = first_error(error)
        raise ConfigError(f"{section}.{message}") from error


def _snake_keys(table: Mapping[str, Any], section: str) -> dict[str, Any]:
    if not isinstance(table, Mapping):
        raise ConfigError(f"{section}: expected an object")
    return {to_snake(key): value for key, value in table.items()}


def apply_settings_patch(config: AppConfig, patch: Mapping[str, Any]) -> AppConfig:
    """`config` with a Settings UI change applied (camelCase, as `public_settings`).

    `{"defaults": {"model"}, "providers": {name: {kind, baseUrl, apiKeyEnv} | null},
    "models": {name: {provider, contextWindow, maxOutputTokens, inputLimit, workingBudget, …}
    | null},
    "compaction": {...}}`; `null` removes a provider or model (the implicit `anthropic`
    and `openai` return to their defaults). Keys are refused here: they go through
    `foldline.secrets.set_api_key`, never into config.toml.
    """
    unknown = set(patch) - {"defaults", "providers", "models", "compaction"}
    if unknown:
        raise ConfigError(f"unknown settings section(s): {', '.join(sorted(unknown))}")
    default = config.default_model
    providers = dict(config.providers)
    models = dict(config.models)
    compaction = config.compaction
    if "defaults" in patch:
        defaults = _snake_keys(patch["defaults"], "defaults")
        default = _validated(DefaultsTable, defaults, "defaults").model or None
    for name, change in (patch.get("providers") or {}).items():
        if change is None:
            providers.pop(name, None)
            if name in IMPLICIT_PROVIDERS:
                providers[name] = ProviderConfig(kind=name)
            continue
        fields = _snake_keys(change, f"providers.{name}")
        if "api_key" in fields:
            raise ConfigError("API keys are set through the key store, not config.toml")
        current = providers[name].model_dump() if name in providers else {}
        merged = {**current, **fields}
        if "kind" not in merged and name in IMPLICIT_PROVIDERS:
            merged["kind"] = name
        updated = _validated(ProviderConfig, merged, f"providers.{name}")
        if updated.kind == "openai-compatible" and not updated.base_url:
            raise ConfigError(f"providers.{name}: an openai-compatible provider needs a base URL")
        providers[name] = updated
    for name, change in (patch.get("models") or {}).items():
        if change is None:
            models.pop(name, None)
            continue
        current = models[name].model_dump() if name in models else {}
        fields = _snake_keys(change, f'models."{name}"')
        models[name] = _validated(ModelConfig, {**current, **fields}, f'models."{name}"')
    if "compaction" in patch:
        changes = _snake_keys(patch["compaction"], "compaction")
        current = {k: getattr(compaction, k) for k in compaction.model_fields_set}
        compaction = _validated(CompactionSettings, {**current, **changes}, "compaction")
    for name, model in models.items():
        if model.provider is not None and model.provider not in providers:
            raise ConfigError(f'models."{name}".provider: no provider named `{model.provider}`')
    return AppConfig(
        default_model=default,
        providers=providers,
        models=models,
        compaction=compaction,
        mcp_servers=config.mcp_servers,
        data_dir=config.data_dir,
    )
