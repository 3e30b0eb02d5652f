"""What the config tests share: the documented config.toml example, the environment
variables they clear, and small writers of config files."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldline.config import (
    AppConfig,
    ConfigError,
    ModelConfig,
    ProviderConfig,
    config_path,
    load_config,
)

DOCUMENTED_EXAMPLE = """\
[defaults]
model = "claude-sonnet-4-5"

[providers.anthropic]            # also reads ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL
[providers.openai]               # also reads OPENAI_API_KEY / OPENAI_BASE_URL
[providers.local]
kind = "openai-compatible"
base_url = "http://127.0.0.1:11434/v1"

[models."my-model"]              # limits for models the catalog does not know
provider = "local"
context_window = 32768
max_output_tokens = 4096

[compaction]
auto = true
prune = true
threshold = 0.80                 # fraction of the input budget
target = 0.50
keep_recent_tokens = 8000
strategy = "structured"          # or "narrative"
tool_result_token_cap = 4000
model = ""                       # optional cheaper summarizer model
"""

ENVIRONMENT = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "LOCAL_KEY",
)


def write(data_dir: Path, text: str) -> None:
    config_path(data_dir).write_text(text, encoding="utf-8")


def error_of(data_dir: Path, text: str) -> ConfigError:
    write(data_dir, text)
    with pytest.raises(ConfigError) as caught:
        load_config(data_dir)
    return caught.value


def local_config(**models: ModelConfig) -> AppConfig:
    providers = dict(AppConfig().providers)
    providers["local"] = ProviderConfig(kind="openai-compatible", base_url="http://127.0.0.1:9/v1")
    return AppConfig(providers=providers, models=models)
