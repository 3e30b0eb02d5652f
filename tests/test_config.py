"""config.toml (the documented example), the environment overlay, models and providers."""

from __future__ import annotations

import json
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx2
import keyring
import keyring.backend
import keyring.errors
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from keyring.backends import fail

from foldline.api.schemas import ModelSettingsOut
from foldline.config import (
    DEFAULT_CONTEXT_WINDOW,
    AppConfig,
    ConfigError,
    ModelConfig,
    ProviderConfig,
    apply_settings_patch,
    config_path,
    default_model,
    load_config,
    parse_config,
    public_settings,
)
from foldline.config_toml import dumps_config, ensure_config, save_config
from foldline.core.messages import user
from foldline.core.settings import CompactionSettings
from foldline.providers.anthropic import AnthropicProvider
from foldline.providers.base import ModelRequest, TextDelta
from foldline.providers.compat import OpenAICompatibleProvider
from foldline.providers.openai import OpenAIProvider
from foldline.providers.registry import (
    build_provider,
    discover_model,
    provider_for_model,
    provider_name_for_model,
    resolve_model,
)
from foldline.secrets import SERVICE, set_api_key

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


class MemoryKeyring(keyring.backend.KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.passwords.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError("not found")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    original = keyring.get_keyring()
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    yield memory
    keyring.set_keyring(original)


def write(data_dir: Path, text: str) -> None:
    config_path(data_dir).write_text(text, encoding="utf-8")


def error_of(data_dir: Path, text: str) -> ConfigError:
    write(data_dir, text)
    with pytest.raises(ConfigError) as caught:
        load_config(data_dir)
    return caught.value


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


# --- models and providers ----------------------------------------------------------------


def local_config(**models: ModelConfig) -> AppConfig:
    providers = dict(AppConfig().providers)
    providers["local"] = ProviderConfig(kind="openai-compatible", base_url="http://127.0.0.1:9/v1")
    return AppConfig(providers=providers, models=models)


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-sonnet-4-5", "anthropic"),
        ("claude-opus-9", "anthropic"),
        ("gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("chatgpt-4o-latest", "openai"),
        ("llama3.1:8b", "local"),
        ("gpt-oss:20b", "local"),
        ("anthropic/claude-sonnet-4.5", "local"),
    ],
)
def test_which_provider_serves_a_model(model: str, provider: str) -> None:
    assert provider_name_for_model(local_config(), model) == provider


def test_no_provider_for_a_local_model_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="no provider for model `qwen3`"):
        provider_name_for_model(AppConfig(), "qwen3")


def test_catalog_limits_and_output_reserve() -> None:
    resolved = resolve_model(AppConfig(), "claude-sonnet-4-5")
    assert (resolved.provider_name, resolved.provider_kind) == ("anthropic", "anthropic")
    assert (resolved.context_window, resolved.max_output_tokens) == (200_000, 64_000)
    assert (resolved.known, resolved.source) == (True, "catalog")
    # An eighth of the window, not the model's whole output cap.
    assert resolved.output_reserve == 25_000
    assert resolved.note is not None and "1M" in resolved.note
    # A 200k window folds at its own budget: no working budget.
    assert resolved.working_budget is None


def test_config_entry_wins_over_the_catalog() -> None:
    config = local_config(
        **{"claude-sonnet-4-5": ModelConfig(context_window=1_000_000, input_limit=900_000)}
    )
    resolved = resolve_model(config, "claude-sonnet-4-5", discovered_context_window=1234)
    assert (resolved.context_window, resolved.source, resolved.known) == (1_000_000, "config", True)
    assert resolved.max_output_tokens == 64_000
    assert resolved.input_limit == 900_000


def test_server_window_wins_for_compatible_providers_only() -> None:
    config = local_config(**{"gpt-4o": ModelConfig(provider="local")})
    local = resolve_model(config, "gpt-4o", discovered_context_window=8192)
    assert (local.context_window, local.source) == (8192, "server")
    # The catalog's 16k output cap cannot exceed half of a smaller loaded window.
    assert local.max_output_tokens == 4096

    hosted = resolve_model(config, "claude-haiku-4-5", discovered_context_window=8192)
    assert (hosted.context_window, hosted.source) == (200_000, "catalog")


def test_unknown_models_get_a_flagged_conservative_default() -> None:
    resolved = resolve_model(local_config(), "mystery-model")
    assert resolved.context_window == DEFAULT_CONTEXT_WINDOW
    assert resolved.max_output_tokens == 2048
    assert (resolved.known, resolved.source) == (False, "default")
    assert resolved.note is not None and "unknown" in resolved.note
    assert resolved.output_reserve == 2048

    guessed = resolve_model(local_config(), "claude-opus-9")
    assert (guessed.context_window, guessed.known, guessed.source) == (200_000, False, "guess")


def test_unlimited_window() -> None:
    config = local_config(**{"big": ModelConfig(provider="local", context_window=0)})
    resolved = resolve_model(config, "big")
    assert resolved.context_window == 0
    assert resolved.output_reserve == 2048


async def test_discover_model_asks_the_server() -> None:
    asked: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        asked.append(request.url.path)
        if request.url.path == "/props":
            return httpx2.Response(200, json={"default_generation_settings": {"n_ctx": 12288}})
        return httpx2.Response(404)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        found = await discover_model(local_config(), "qwen3", http_client=client)
        assert (found.context_window, found.source, found.known) == (12288, "server", True)

        asked.clear()
        configured = local_config(**{"qwen3": ModelConfig(provider="local", context_window=4096)})
        kept = await discover_model(configured, "qwen3", http_client=client)
        assert (kept.context_window, kept.source) == (4096, "config")
        hosted = await discover_model(local_config(), "gpt-4o", http_client=client)
        assert hosted.source == "catalog"
        assert asked == []  # neither an explicit entry nor a hosted model asks a server


def test_build_provider_kinds_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = local_config().model_copy(update={"data_dir": tmp_path})
    anthropic = build_provider(config, "anthropic")
    openai = build_provider(config, "openai")
    local = build_provider(config, "local")
    assert isinstance(anthropic, AnthropicProvider)
    assert type(openai) is OpenAIProvider
    assert isinstance(local, OpenAICompatibleProvider)
    assert local.base_url == "http://127.0.0.1:9/v1"

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://env.example")
    assert build_provider(config, "anthropic").base_url == "http://env.example"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="no provider named `nope`"):
        build_provider(config, "nope")


async def test_a_stored_key_reaches_the_sdk(tmp_path: Path, _isolated: MemoryKeyring) -> None:
    set_api_key(tmp_path, "anthropic", "sk-ant-from-keyring-1")
    seen: list[httpx2.Request] = []
    stream = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
        '"role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,'
        '"usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text","text":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"hi"}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
        '"stop_sequence":null},"usage":{"output_tokens":2}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(
            200, content=stream.encode(), headers={"content-type": "text/event-stream"}
        )

    config = AppConfig(data_dir=tmp_path)
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        provider = build_provider(
            config, provider_name_for_model(config, "claude-test-1"), http_client=client
        )
        events = [e async for e in provider.stream(ModelRequest("claude-test-1", "", [user("x")]))]

    assert TextDelta("hi") in events
    (request,) = seen
    headers = request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
    assert "sk-ant-from-keyring-1" in headers
    assert isinstance(provider_for_model(config, "gpt-4o"), OpenAIProvider)


def test_key_precedence_environment_then_store_then_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _isolated: MemoryKeyring
) -> None:
    config = AppConfig(
        providers={
            "anthropic": ProviderConfig(kind="anthropic"),
            "openai": ProviderConfig(kind="openai", api_key="sk-config-file-1"),
        },
        data_dir=tmp_path,
    )
    assert public_settings(config).model_dump()["providers"]["openai"]["keySource"] == "config"
    _isolated.set_password(SERVICE, "openai", "sk-keyring-12345")
    assert public_settings(config).model_dump()["providers"]["openai"]["keySource"] == "keyring"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-environment-1")
    shown = public_settings(config).model_dump()["providers"]["openai"]
    assert (shown["keySource"], shown["maskedKey"], shown["keyEnv"]) == (
        "env",
        "sk-…nt-1",
        "OPENAI_API_KEY",
    )


# --- the Settings UI ---------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("model", "vision"),
    [
        ("gpt-4o", True),
        ("gpt-4o-mini", True),
        ("gpt-4.1-nano", True),
        ("gpt-5.2", True),
        ("gpt-6", True),
        ("o1", True),
        ("o3-pro", True),
        ("o4-mini", True),
        ("o1-mini", False),
        ("o3-mini", False),
        ("gpt-4o-audio-preview", False),
        ("gpt-3.5-turbo", False),
        ("gpt-4", False),
        ("claude-haiku-4-5", True),
    ],
)
def test_which_hosted_models_accept_images(model: str, vision: bool) -> None:
    assert resolve_model(AppConfig(), model).vision is vision


def test_other_models_accept_images_only_when_the_config_says_so() -> None:
    config = local_config(
        **{
            "llava": ModelConfig(vision=True),
            "gpt-4o": ModelConfig(provider="local"),
            "gpt-5": ModelConfig(vision=False),
        }
    )
    assert resolve_model(config, "llava").vision is True
    assert resolve_model(config, "qwen3").vision is False
    # A compatible server serving an OpenAI-looking name is not assumed to take images.
    assert resolve_model(config, "gpt-4o").vision is False
    assert resolve_model(config, "gpt-5").vision is False


def test_the_settings_answer_has_every_field_of_a_model_table() -> None:
    # `ModelSettingsOut` (the API layer, below config) repeats `[models."name"]` field
    # for field; a knob added to the table must be shown in Settings too.
    assert list(ModelSettingsOut.model_fields) == list(ModelConfig.model_fields)
