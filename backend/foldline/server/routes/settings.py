"""Settings: what the UI may see of config.toml, saving it, trying a provider, and
finding a local model server for onboarding.

API keys go to the key store (`foldline.secrets`: OS keyring, else a 0600 file), never
into config.toml and never back to the client: answers carry `hasKey` and a mask.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from foldline.api.schemas_settings import (
    ConnectionTest,
    ConnectionTestResult,
    LocalServers,
    SettingsOut,
    SettingsUpdate,
)
from foldline.config import AppConfig, ConfigError
from foldline.config_settings import apply_settings_patch, public_settings
from foldline.core.messages import user
from foldline.providers.base import ModelRequest, Provider, ProviderError, Stop, TextDelta
from foldline.providers.catalog import SUGGESTED_MODELS
from foldline.providers.registry import build_provider
from foldline.secrets import delete_api_key, set_api_key
from foldline.server.config_source import ConfigSource
from foldline.server.deps import DataDirDep
from foldline.server.errors import ApiError
from foldline.server.local_servers import DEFAULT_TARGETS, LocalServerTarget, detect_local_servers
from foldline.server.model_refresh import schedule_refresh

router = APIRouter(prefix="/api/settings", tags=["settings"])

CONNECTION_TEST_TIMEOUT_SECONDS = 20.0


async def get_config_source(request: Request) -> ConfigSource:
    return request.app.state.config_source


async def get_provider_builder() -> Callable[[AppConfig, str], Provider]:
    """How a configured provider is built (tests override this dependency)."""
    return build_provider


async def get_local_targets() -> tuple[LocalServerTarget, ...]:
    """Which local servers onboarding probes (tests override this dependency)."""
    return DEFAULT_TARGETS


ConfigSourceDep = Annotated[ConfigSource, Depends(get_config_source)]
ProviderBuilderDep = Annotated[Callable[[AppConfig, str], Provider], Depends(get_provider_builder)]
LocalTargetsDep = Annotated[tuple[LocalServerTarget, ...], Depends(get_local_targets)]


def _invalid(error: Exception) -> ApiError:
    return ApiError(422, "invalid_settings", str(error))


@router.get("", response_model=SettingsOut)
def read_settings(source: ConfigSourceDep) -> SettingsOut:
    """`defaults`, `providers` (with `hasKey`/`maskedKey`, never a key), `models`,
    `compaction`, `keyStorage` (where keys go, and a warning if unencrypted)."""
    return public_settings(source())


@router.put("", response_model=SettingsOut)
async def update_settings(
    body: SettingsUpdate, source: ConfigSourceDep, data_dir: DataDirDep, request: Request
) -> SettingsOut:
    """Apply a partial change; every part is checked before anything is written. A
    provider given a new key is asked for its models right away (in the background)."""
    # The key store may block (an OS keyring over D-Bus): off the event loop.
    result = await run_in_threadpool(_update_settings, body, source, data_dir)
    for provider_name, key in (body.keys or {}).items():
        if key is not None:
            schedule_refresh(request.app, provider_name)
    # A local server just added is asked for its models and what it says about them.
    directory = request.app.state.model_directory
    for name, provider in source().providers.items():
        if provider.kind == "openai-compatible" and directory.listing(name) is None:
            schedule_refresh(request.app, name)
    return result


def _update_settings(body: SettingsUpdate, source: ConfigSource, data_dir: Path) -> SettingsOut:
    config = source()
    patch = body.model_dump(exclude_unset=True, exclude={"keys"})
    try:
        updated = apply_settings_patch(config, patch) if patch else config
    except ConfigError as error:
        raise _invalid(error) from error
    keys = body.keys or {}
    for provider_name, key in keys.items():
        if provider_name not in updated.providers:
            raise ApiError(422, "invalid_settings", f"keys: no provider named `{provider_name}`")
        if key is not None and not key.strip():
            raise ApiError(422, "invalid_settings", f"keys.{provider_name}: the key is empty")
    if patch:
        source.save(updated)
    for provider_name, key in keys.items():
        if key is None:
            delete_api_key(data_dir, provider_name)
        else:
            set_api_key(data_dir, provider_name, key)
    return public_settings(source())


@router.post("/test-connection", response_model=ConnectionTestResult)
async def test_connection(
    body: ConnectionTest, source: ConfigSourceDep, build: ProviderBuilderDep
) -> ConnectionTestResult:
    """Send a one-token request with the *saved* settings of `provider` (save first)."""
    config = source()
    if body.provider not in config.providers:
        raise ApiError(404, "not_found", f"No provider named `{body.provider}`.")
    # The same suggestion onboarding and Settings show for a hosted provider.
    kind = config.providers[body.provider].kind
    model = body.model or config.default_model or SUGGESTED_MODELS.get(kind)
    if not model:
        return ConnectionTestResult(
            ok=False,
            provider=body.provider,
            model=None,
            error_code="no_model",
            message=(
                f"Type a model `{body.provider}` serves in “Try with model” (Settings → "
                "Models lists what it offers once it answers)."
            ),
        )
    started = time.monotonic()
    try:
        provider = build(config, body.provider)
        reply = await asyncio.wait_for(
            _one_token(provider, model), timeout=CONNECTION_TEST_TIMEOUT_SECONDS
        )
    except ProviderError as error:
        return ConnectionTestResult(
            ok=False,
            provider=body.provider,
            model=model,
            error_code=error.code,
            message=error.message,
        )
    except TimeoutError:
        return ConnectionTestResult(
            ok=False,
            provider=body.provider,
            model=model,
            error_code="timeout",
            message=f"No answer within {CONNECTION_TEST_TIMEOUT_SECONDS:.0f} s.",
        )
    except Exception as error:  # a bad base URL, a missing key: the person's to fix
        return ConnectionTestResult(
            ok=False,
            provider=body.provider,
            model=model,
            error_code="unavailable",
            message=str(error) or type(error).__name__,
        )
    return ConnectionTestResult(
        ok=True,
        provider=body.provider,
        model=model,
        latency_ms=round((time.monotonic() - started) * 1000),
        message=reply[:200],
    )


async def _one_token(provider: Provider, model: str) -> str:
    request = ModelRequest(model=model, system="", messages=[user("Say OK.")], max_output_tokens=8)
    text: list[str] = []
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, Stop):
            break
    return "".join(text)


@router.get("/detect-local", response_model=LocalServers)
async def detect_local(targets: LocalTargetsDep) -> LocalServers:
    """Probe 127.0.0.1:11434 (Ollama) and 127.0.0.1:1234 (LM Studio), < 1 s."""
    return LocalServers(servers=await detect_local_servers(targets))
