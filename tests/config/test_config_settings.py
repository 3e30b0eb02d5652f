"""The Settings UI's view of the config (never a key) and its patches."""

from __future__ import annotations

import json
from pathlib import Path

import keyring
import pytest
from config_setup import DOCUMENTED_EXAMPLE, write
from keyring.backends import fail

from foldline.api.schemas_settings import ModelSettingsOut
from foldline.config import (
    AppConfig,
    ConfigError,
    ModelConfig,
    ProviderConfig,
    load_config,
)
from foldline.config_settings import apply_settings_patch, public_settings
from foldline.config_toml import save_config
from foldline.secrets import set_api_key


def test_public_settings_never_contain_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyring.set_keyring(fail.Keyring())
    write(
        tmp_path,
        DOCUMENTED_EXAMPLE
        + '\n[providers.extra]\nkind = "openai"\napi_key = "sk-plain-in-config-9"\n',
    )
    config = load_config(tmp_path)
    set_api_key(tmp_path, "anthropic", "sk-ant-secret-value-1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-env-secret-2")

    shown = public_settings(config).model_dump()
    text = json.dumps(shown)
    for secret in ("sk-ant-secret-value-1", "sk-openai-env-secret-2", "sk-plain-in-config-9"):
        assert secret not in text
    providers = shown["providers"]
    assert providers["anthropic"] == {
        "kind": "anthropic",
        "baseUrl": None,
        "baseUrlSource": None,
        "hasKey": True,
        "maskedKey": "sk-…ue-1",
        "keySource": "file",
        "keyEnv": "ANTHROPIC_API_KEY",
    }
    assert providers["local"]["hasKey"] is False
    assert providers["local"]["baseUrlSource"] == "config"
    assert shown["models"]["my-model"]["contextWindow"] == 32768
    assert shown["compaction"]["keepRecentTokens"] == 8000
    assert shown["keyStorage"]["backend"] == "file"
    assert shown["keyStorage"]["warning"]


def test_settings_patch_round_trips_through_the_file(tmp_path: Path) -> None:
    write(tmp_path, DOCUMENTED_EXAMPLE)
    config = load_config(tmp_path)
    patched = apply_settings_patch(
        config,
        {
            "defaults": {"model": "gpt-4o"},
            "providers": {
                "lmstudio": {"kind": "openai-compatible", "baseUrl": "http://127.0.0.1:1234/v1"},
                "anthropic": {"baseUrl": "https://proxy.example"},
            },
            "models": {"my-model": None, "qwen3": {"provider": "lmstudio", "contextWindow": 8192}},
            "compaction": {"keepRecentTokens": 12000, "strategy": "narrative"},
        },
    )
    save_config(tmp_path, patched)
    reloaded = load_config(tmp_path)

    assert reloaded == patched
    assert reloaded.default_model == "gpt-4o"
    assert reloaded.providers["anthropic"].base_url == "https://proxy.example"
    assert "my-model" not in reloaded.models
    assert reloaded.models["qwen3"].context_window == 8192
    assert reloaded.compaction.keep_recent_tokens == 12000
    assert reloaded.compaction.threshold == 0.80  # untouched keys stay


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({"providers": {"openai": {"apiKey": "sk-x"}}}, "key store"),
        ({"providers": {"local": None}}, "no provider named `local`"),
        ({"providers": {"new": {"kind": "openai-compatible"}}}, "needs a base URL"),
        ({"compaction": {"threshold": 3}}, "compaction.threshold"),
        ({"models": {"m": {"contextWindow": "big"}}}, "context_window"),
        ({"colour": "blue"}, "unknown settings section"),
    ],
)
def test_invalid_patches_are_refused(
    tmp_path: Path, patch: dict[str, object], fragment: str
) -> None:
    write(tmp_path, DOCUMENTED_EXAMPLE)
    with pytest.raises(ConfigError) as caught:
        apply_settings_patch(load_config(tmp_path), patch)
    assert fragment in str(caught.value)


def test_removing_an_implicit_provider_resets_it(tmp_path: Path) -> None:
    config = AppConfig(
        providers={
            "anthropic": ProviderConfig(kind="anthropic", base_url="http://x"),
            "openai": ProviderConfig(kind="openai"),
        }
    )
    reset = apply_settings_patch(config, {"providers": {"anthropic": None}})
    assert reset.providers["anthropic"] == ProviderConfig(kind="anthropic")


def test_the_settings_answer_has_every_field_of_a_model_table() -> None:
    # `ModelSettingsOut` (the API layer, below config) repeats `[models."name"]` field
    # for field; a knob added to the table must be shown in Settings too.
    assert list(ModelSettingsOut.model_fields) == list(ModelConfig.model_fields)
