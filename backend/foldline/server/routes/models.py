"""The models the configured providers offer: `GET /api/models`, `POST /api/models/refresh`.

The lists come from the providers themselves (`foldline.providers.discovery`), fetched at
start when older than a day, when a key is added and when Settings asks; every model's
limits are resolved as a conversation would resolve them (config, then the provider's
list, then the catalog). A provider that cannot be asked falls back on its last good list
or on the built-in catalog, and says that the list may be stale.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request

from foldline.api.schemas_models import (
    ModelOut,
    ModelPricesOut,
    ModelsOut,
    ModelsRefresh,
    ProviderModelsStatus,
)
from foldline.config import AppConfig, ConfigError, find_provider_key
from foldline.providers import catalog
from foldline.providers.discovery import refresh_all, refresh_provider
from foldline.providers.listing import ListedModel, ModelDirectory, ProviderListing
from foldline.providers.registry import provider_name_for_model, resolve_model
from foldline.server.errors import ApiError
from foldline.server.routes.settings import ConfigSourceDep

router = APIRouter(prefix="/api/models", tags=["models"])


async def get_model_directory(request: Request) -> ModelDirectory:
    return request.app.state.model_directory


ModelDirectoryDep = Annotated[ModelDirectory, Depends(get_model_directory)]

_LABELS = {"anthropic": "Anthropic", "openai": "OpenAI"}


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def _catalog_models(kind: str) -> list[ListedModel]:
    return [
        ListedModel(id=info.id, lifecycle=info.lifecycle)
        for info in catalog.all_models()
        if info.provider == kind
    ]


def _provider_status(
    name: str, kind: str, listing: ProviderListing | None, now: float
) -> tuple[ProviderModelsStatus, list[ListedModel]]:
    """The provider's status for the UI, and the models to offer from it."""
    label = _LABELS.get(kind, name)
    fetched = listing.fetched_at if listing is not None else None
    error = listing.error if listing is not None else None
    if listing is not None and fetched is not None:
        models = list(listing.models)
        fresh = listing.is_fresh(now)
        source = "provider"
        status = "ok" if fresh else "stale"
        message = None
        if not fresh:
            age = f"the list is from {_iso(fetched)} and may be stale."
            message = f"{label} could not be asked ({error}); {age}" if error else f"T{age[1:]}"
    elif kind in _LABELS:
        models = _catalog_models(kind)
        source, status = "catalog", "stale"
        reason = f"{label} could not be asked ({error})" if error else f"{label} was not asked yet"
        message = (
            f"{reason}; the list is Foldline's built-in catalog of {catalog.CATALOG_DATE} "
            "and may be stale."
        )
    else:
        models, source, status = [], "none", "stale"
        message = f"`{name}` could not be asked ({error})." if error else None
    provider_status = ProviderModelsStatus(
        name=name,
        kind=kind,
        status=status,
        source=source,
        fetched_at=_iso(fetched),
        error=error,
        message=message,
        suggested=None,
    )
    return provider_status, models


def _model_out(
    config: AppConfig, directory: ModelDirectory, provider: str, model_id: str
) -> ModelOut:
    resolved = resolve_model(config, model_id, listing=directory, provider_name=provider)
    listed = directory.find(provider, model_id)
    prices = resolved.prices
    return ModelOut(
        id=model_id,
        provider=provider,
        provider_kind=resolved.provider_kind,
        display_name=resolved.display_name,
        line=listed.line if listed is not None else None,
        lifecycle=resolved.lifecycle,
        context_window=resolved.context_window,
        max_output_tokens=resolved.max_output_tokens,
        known=resolved.known,
        limit_source=resolved.source,
        working_budget=resolved.working_budget,
        working_budget_source=resolved.working_budget_source,
        reasoning_effort=resolved.reasoning_effort,
        reasons=resolved.reasons,
        api=resolved.api,
        window_source=resolved.window_source,
        server=resolved.server,
        slots=listed.slots if listed is not None else None,
        learned_at=_iso(listed.learned_at) if listed is not None else None,
        prices=None
        if prices is None
        else ModelPricesOut.model_validate(prices, from_attributes=True),
    )


def _served_by(config: AppConfig, model_name: str) -> str | None:
    """The provider of a configured model: its `provider` line, else the one that serves
    its family (a `[models."gpt-…"]` table without a provider is OpenAI's)."""
    try:
        return provider_name_for_model(config, model_name)
    except ConfigError:
        return None


def available_models(config: AppConfig, directory: ModelDirectory, now: float) -> ModelsOut:
    """The body of `GET /api/models` (see docs/api.md)."""
    providers: list[ProviderModelsStatus] = []
    models: list[ModelOut] = []
    for name, provider in config.providers.items():
        if provider.kind != "openai-compatible" and find_provider_key(config, name) is None:
            providers.append(
                ProviderModelsStatus(
                    name=name,
                    kind=provider.kind,
                    status="no_key",
                    source="none",
                    fetched_at=None,
                    error=None,
                    message=None,
                    suggested=None,
                )
            )
            continue
        listing = directory.listing(name)
        if listing is not None and listing.kind != provider.kind:
            listing = None
        status, offered = _provider_status(name, provider.kind, listing, now)
        ids = [m.id for m in offered if m.lifecycle != "retired"]
        for model_name in config.models:
            if _served_by(config, model_name) == name and model_name not in ids:
                ids.append(model_name)
        rows = [_model_out(config, directory, name, model_id) for model_id in ids]
        rows = [row for row in rows if row.lifecycle != "retired"]
        suggested = catalog.SUGGESTED_MODELS.get(provider.kind)
        offered_ids = [row.id for row in rows]
        status.suggested = (
            suggested if suggested in offered_ids else (offered_ids[0] if offered_ids else None)
        )
        providers.append(status)
        models.extend(rows)
    return ModelsOut(catalog_date=catalog.CATALOG_DATE, providers=providers, models=models)


@router.get("", response_model=ModelsOut)
def list_models(source: ConfigSourceDep, directory: ModelDirectoryDep) -> ModelsOut:
    """Every configured provider's models (retired ones left out), with their limits,
    lifecycle and working budget, and each provider's status."""
    return available_models(source(), directory, time.time())


@router.post("/refresh", response_model=ModelsOut)
async def refresh_models(
    source: ConfigSourceDep, directory: ModelDirectoryDep, body: ModelsRefresh | None = None
) -> ModelsOut:
    """Ask the providers again now (all of them, or `provider`), then answer as `GET`."""
    config = source()
    if body is not None and body.provider is not None:
        if body.provider not in config.providers:
            raise ApiError(404, "not_found", f"No provider named `{body.provider}`.")
        await refresh_provider(directory, config, body.provider)
    else:
        await refresh_all(directory, config)
    return available_models(config, directory, time.time())
