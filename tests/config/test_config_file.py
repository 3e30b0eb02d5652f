"""config.toml read (the documented example, errors that name their line) and written."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest
from config_setup import DOCUMENTED_EXAMPLE, error_of, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from foldline.config import (
    AppConfig,
    ModelConfig,
    ProviderConfig,
    config_path,
    default_model,
    load_config,
    parse_config,
)
from foldline.config_toml import dumps_config, ensure_config, save_config
from foldline.core.settings import CompactionSettings

# --- reading ---------------------------------------------------------------------------


def test_no_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config.default_model is None
    assert config.compaction == CompactionSettings()
    assert {n: p.kind for n, p in config.providers.items()} == {
        "anthropic": "anthropic",
        "openai": "openai",
    }
    assert config.data_dir == tmp_path


def test_first_run_creates_a_commented_default_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "new" / "dir"
    path = ensure_config(data_dir)

    assert path == data_dir / "config.toml"
    text = path.read_text()
    assert "# " in text and "[compaction]" in text
    assert load_config(data_dir).model_dump(exclude={"data_dir"}) == AppConfig().model_dump(
        exclude={"data_dir"}
    )
    path.write_text(text + "\n# mine\n")
    ensure_config(data_dir)
    assert path.read_text().endswith("# mine\n")


def test_the_design_example_reads_as_written(tmp_path: Path) -> None:
    write(tmp_path, DOCUMENTED_EXAMPLE)
    config = load_config(tmp_path)

    assert default_model(config) == "claude-sonnet-4-5"
    assert config.providers["local"] == ProviderConfig(
        kind="openai-compatible", base_url="http://127.0.0.1:11434/v1"
    )
    assert config.models["my-model"] == ModelConfig(
        provider="local", context_window=32768, max_output_tokens=4096
    )
    assert config.compaction.threshold == 0.80
    assert config.compaction.strategy == "structured"


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    error = error_of(tmp_path, '[defaults]\nmodel = "x"\n\n[compaction\nauto = true\n')
    assert error.line == 4
    assert error.path == config_path(tmp_path)
    assert str(error).startswith(f"{config_path(tmp_path)}:4: ")


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('[compaction]\nauto = true\nthreshold = "high"\n', 3, "compaction.threshold"),
        ("[compaction]\nauto = true\nthreshold = 1.5\n", 3, "compaction.threshold"),
        ("[compaction]\n\ntreshold = 0.7\n", 3, "unknown setting `treshold`"),
        (
            "[defaults]\nmodel = 'm'\n[providers.local]\nbase_url = 'http://x'\n",
            3,
            "`kind` is required",
        ),
        ("[providers.local]\nkind = 'openai-compatible'\n", 1, "needs `base_url`"),
        ("[providers.x]\nkind = 'gemini'\n", 2, "providers.x.kind"),
        ('[models."m"]\ncontext_window = 100\nprovider = "nope"\n', 3, "no provider named `nope`"),
        ('[models."m"]\ncontext_window = -1\n', 2, "models.m.context_window"),
        ("[surprise]\nx = 1\n", 1, "unknown setting `surprise`"),
        ('[models."m"]\ncontext_window = 9223372036854775808\n', 2, "models.m.context_window"),
        ("[compaction]\nkeep_recent_tokens = 99999999999\n", 2, "keep_recent_tokens"),
        (
            "[providers.x]\nkind = 'openai-compatible'\nbase_url = 'http://u:sk-s3cret-99@h/v1'\n",
            3,
            "must not contain a user name or key",
        ),
    ],
)
def test_invalid_settings_name_their_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    error = error_of(tmp_path, text)
    assert error.line == line
    assert fragment in str(error)
    assert "s3cret" not in str(error)


# --- writing ---------------------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    config = AppConfig(
        default_model="llama3.1:8b",
        providers={
            "anthropic": ProviderConfig(kind="anthropic", base_url="https://proxy.example/a"),
            "openai": ProviderConfig(kind="openai"),
            "my.local box": ProviderConfig(
                kind="openai-compatible",
                base_url="http://127.0.0.1:1234/v1",
                api_key_env="LOCAL_KEY",
            ),
        },
        models={
            "llama3.1:8b": ModelConfig(provider="my.local box", context_window=16384),
            'we"ird\\name': ModelConfig(max_output_tokens=100, input_limit=5000),
        },
        compaction=CompactionSettings(
            threshold=0.7, strategy="narrative", protected_tools=("a", "b")
        ),
    )
    save_config(tmp_path, config)
    loaded = load_config(tmp_path)

    assert loaded == config.model_copy(update={"data_dir": tmp_path})
    assert stat.S_IMODE(config_path(tmp_path).stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


def test_save_keeps_set_keys_and_leaves_untouched_defaults_out(tmp_path: Path) -> None:
    write(tmp_path, "[compaction]\nauto = true\nthreshold = 0.75\n")
    save_config(tmp_path, load_config(tmp_path))
    compaction = tomllib.loads(config_path(tmp_path).read_text())["compaction"]
    assert compaction == {"auto": True, "threshold": 0.75}


def test_a_plaintext_key_in_the_file_makes_it_private(tmp_path: Path) -> None:
    config = AppConfig(
        providers={"openai": ProviderConfig(kind="openai", api_key="sk-in-the-file-123")}
    )
    save_config(tmp_path, config)
    assert stat.S_IMODE(config_path(tmp_path).stat().st_mode) == 0o600
    assert load_config(tmp_path).providers["openai"].api_key == "sk-in-the-file-123"


_names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    provider_name=_names,
    model_name=_names,
    base_url=_names,
    default=st.none() | _names,
    window=st.none() | st.integers(0, 2_000_000),
    threshold=st.floats(0.01, 1.0),
)
def test_any_names_round_trip_through_the_writer(
    provider_name: str,
    model_name: str,
    base_url: str,
    default: str | None,
    window: int | None,
    threshold: float,
) -> None:
    providers = dict(AppConfig().providers)
    providers[provider_name] = ProviderConfig(kind="openai-compatible", base_url=base_url)
    config = AppConfig(
        default_model=default,
        providers=providers,
        models={model_name: ModelConfig(provider=provider_name, context_window=window)},
        compaction=CompactionSettings(threshold=threshold),
    )
    assert parse_config(dumps_config(config)) == config
