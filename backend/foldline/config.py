"""`<data-dir>/config.toml` and the environment → `AppConfig`.

The file is described in docs/configuration.md. It is read with `tomllib` and written by
the small writer in `foldline.config_toml` (the Settings UI saves through `save_config`);
comments are not kept by a save, so the header of a saved file says so.

Environment variables are overlaid when a provider is built or shown, never written to
the file: ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL apply to the provider named `anthropic`,
OPENAI_API_KEY / OPENAI_BASE_URL to the one named `openai`, and any provider may name
its own key variable with `api_key_env`. The environment wins over stored values (see
`foldline.secrets` for why); `effective_base_url` and `find_provider_key` say where each
value came from, and `foldline.config_settings` shows and changes the file for the
Settings UI.

Which provider serves a model and with which limits is `foldline.providers.registry`,
which builds on this module; writing the file is `foldline.config_toml` (`save_config`,
`ensure_config`), which builds on it too. This module imports neither, so the three
form no import cycle.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from foldline.config_mcp import McpServerConfig, check_server_name
from foldline.core.reasoning import Effort, ThinkingForm, reasoning_support
from foldline.core.settings import MAX_TOKENS, CompactionSettings
from foldline.secrets import find_api_key

__all__ = [
    "AppConfig",
    "ConfigError",
    "ModelConfig",
    "ProviderConfig",
    "config_path",
    "default_model",
    "effective_base_url",
    "find_provider_key",
    "load_config",
    "parse_config",
    "provider_config",
]


CONFIG_FILE = "config.toml"
ProviderKind = Literal["anthropic", "openai", "openai-compatible"]

DEFAULT_CONTEXT_WINDOW = 2048
"""The window assumed when neither the config, the server, the provider's list nor the
catalog tells one: the smallest that local servers load by default (llama-cpp-python's
`n_ctx`; llama.cpp, Ollama and LM Studio start at 4096). Assuming more lets a prompt over
the real window reach the server, which may cut it silently or answer with nothing."""
DEFAULT_MAX_OUTPUT_TOKENS = 2048

# The providers that exist without a section, and the environment each one reads.
IMPLICIT_PROVIDERS: tuple[ProviderKind, ...] = ("anthropic", "openai")
BASE_URL_ENV: Mapping[str, str] = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
}
KEY_ENV: Mapping[str, str] = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


class ConfigError(Exception):
    """A problem with the configuration, with the file and line when there is one."""

    def __init__(self, message: str, path: Path | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        where = f"{path}:{line}: " if path and line else f"{path}: " if path else ""
        super().__init__(f"{where}{message}")


class NoModelConnected(ConfigError):
    """A conversation with no model and no provider that could serve one: it was made (or
    imported) before any model was connected. Not a fault of config.toml, so the app
    answers it with its own code and the UI lets the Welcome page speak."""


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _url_without_credentials(value: str | None) -> str | None:
    # A key typed into a URL (`http://user:sk-…@host`) would be stored in config.toml and
    # shown in the Settings screen in plain text; keys belong in the key store. The
    # message never repeats the URL, which holds the secret.
    if value is not None:
        try:
            parts = urlsplit(value)
            has_credentials = parts.username is not None or parts.password is not None
        except ValueError:
            raise ValueError("base_url is not a valid URL") from None
        if has_credentials:
            raise ValueError(
                "base_url must not contain a user name or key (user:key@host); remove it "
                "and save the key as the provider's API key (kept in the key store)"
            )
    return value


class ProviderConfig(_Section):
    """One `[providers.NAME]` table."""

    kind: ProviderKind
    base_url: str | None = None

    check_base_url = field_validator("base_url")(_url_without_credentials)
    api_key: str | None = None
    """A key written into config.toml by hand. Discouraged (plaintext); the keyring, the
    0600 secrets file and the environment all take precedence."""
    api_key_env: str | None = None
    """The environment variable holding this provider's key (overrides the default)."""


class ModelConfig(_Section):
    """One `[models."name"]` table: limits for a model, and which provider serves it."""

    provider: str | None = None
    context_window: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    """0 means unlimited: never fold automatically."""
    max_output_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    input_limit: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    """An explicit input budget, when the provider limits input separately."""
    input_price: float | None = Field(default=None, ge=0)
    """US dollars per million input tokens; overrides the catalog."""
    output_price: float | None = Field(default=None, ge=0)
    cache_read_price: float | None = Field(default=None, ge=0)
    cache_write_price: float | None = Field(default=None, ge=0)
    vision: bool | None = None
    """Whether the model accepts image input: images attached to a message are refused
    without it, images tools return are sent only with it. None: by family for OpenAI's
    own models and Claude, false for any other model."""
    working_budget: int | None = Field(default=None, ge=1)
    """The input tokens the fold thresholds apply to, when smaller than the window.

    A 1M-token window filled to an 80% threshold would send 800k tokens with every turn:
    dollars per turn even at cache prices, and answers get worse on very long inputs.
    Folding at a working budget keeps turns cheap and sharp; set it to the window (or
    more) to use the whole window."""
    reasoning_effort: Effort | None = None
    """How much the model reasons before answering: off, low, medium, high or max.
    None: `medium` for a model of a reasoning family (Claude 3.7 and later, GPT-5, GPT-6,
    the o-series), `off` for the others. A conversation may override it."""
    thinking: ThinkingForm | None = None
    """Anthropic only: how a Claude model whose name Foldline does not know reasons,
    `adaptive` (Claude 4.6 and later: adaptive thinking, the effort sent as is) or
    `budget` (Claude 3.7 to 4.5: a `budget_tokens` per effort). None: told by the name;
    a `reasoning_effort` other than off on an unknown Claude name then fails to load,
    rather than being dropped."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """The sampling temperature of the model's chat calls (0 = most deterministic).
    None: the provider's default. A conversation may override it; a model that reasons
    takes none (Anthropic with thinking on, OpenAI's reasoning models)."""
    api: Literal["responses", "chat"] | None = None
    """Which OpenAI API serves the model: `responses` (the Responses API: tools together
    with reasoning, reasoning handed back between calls) or `chat` (Chat Completions).
    None: `responses` for OpenAI's own reasoning models, `chat` for every other model and
    for OpenAI-compatible servers. Ignored for Anthropic."""


def _implicit_providers() -> dict[str, ProviderConfig]:
    return {name: ProviderConfig(kind=name) for name in IMPLICIT_PROVIDERS}


class AppConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _with_implicit_providers(cls, data: Any) -> Any:
        # `anthropic` and `openai` always exist (the environment alone may configure
        # them), so a config built in code reads back equal to the file it writes.
        if isinstance(data, dict) and isinstance(data.get("providers"), Mapping):
            providers = dict(data["providers"])
            for name in IMPLICIT_PROVIDERS:
                providers.setdefault(name, ProviderConfig(kind=name))
            data = {**data, "providers": providers}
        return data

    default_model: str | None = None
    providers: dict[str, ProviderConfig] = Field(default_factory=_implicit_providers)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """`[mcp_servers.NAME]`: MCP servers whose tools the model is offered."""
    data_dir: Path | None = None
    """Where the secrets live; not part of the file."""


# --- reading -------------------------------------------------------------------------


class DefaultsTable(_Section):
    model: str | None = None


class _ProviderTable(_Section):
    kind: ProviderKind | None = None
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None

    check_base_url = field_validator("base_url")(_url_without_credentials)


class _ConfigFile(_Section):
    defaults: DefaultsTable = Field(default_factory=DefaultsTable)
    providers: dict[str, _ProviderTable] = Field(default_factory=dict)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)


_HEADER = re.compile(r"^\[\s*([^\[\]]+?)\s*\]")
_KEY = re.compile(r"""^("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)\s*=""")


def _split_dotted(text: str) -> tuple[str, ...]:
    """`providers."my.local"` → ("providers", "my.local")."""
    parts: list[str] = []
    current = ""
    quote: str | None = None
    for char in text:
        if quote:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return tuple(parts)


def _locate(text: str, loc: tuple[str, ...]) -> int | None:
    """The line of the key or table named by `loc`, or of its nearest enclosing table."""
    headers: dict[tuple[str, ...], int] = {}
    keys: dict[tuple[tuple[str, ...], str], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = _HEADER.match(stripped)
        if header:
            table = _split_dotted(header.group(1))
            headers.setdefault(table, number)
            continue
        key = _KEY.match(stripped)
        if key:
            keys.setdefault((table, _split_dotted(key.group(1))[0]), number)
    for cut in range(len(loc), 0, -1):
        if (loc[: cut - 1], loc[cut - 1]) in keys:
            return keys[(loc[: cut - 1], loc[cut - 1])]
        if loc[:cut] in headers:
            return headers[loc[:cut]]
    return None


def first_error(error: ValidationError) -> tuple[tuple[str, ...], str]:
    detail = error.errors()[0]
    loc = tuple(str(part) for part in detail["loc"])
    message = detail["msg"]
    if detail["type"] == "extra_forbidden":
        message = f"unknown setting `{loc[-1]}`"
    return loc, f"{'.'.join(loc)}: {message}"


def _thinking_problem(
    name: str, model: ModelConfig, providers: Mapping[str, ProviderConfig]
) -> tuple[str, str] | None:
    """Why `[models."name"]`'s reasoning settings cannot be sent as written (the key at
    fault and a sentence), or None. An explicit effort for a Claude model whose name
    Foldline does not know would otherwise be dropped in silence: it needs `thinking`.
    A model served by no provider named is Anthropic's when its name starts `claude`."""
    kind = providers[model.provider].kind if model.provider is not None else None
    anthropic = kind == "anthropic" or (
        kind is None and name.strip().lower().rsplit("/", 1)[-1].startswith("claude")
    )
    if model.thinking is not None and not anthropic:
        return (
            "thinking",
            f'models."{name}".thinking: only Anthropic models take it; an '
            "OpenAI-compatible server gets `reasoning_effort` as it is",
        )
    effort = model.reasoning_effort
    if not anthropic or effort in (None, "off") or model.thinking is not None:
        return None
    if reasoning_support(name).reasons:
        return None
    return (
        "reasoning_effort",
        f'models."{name}".reasoning_effort = "{effort}": Foldline does not know how '
        f'`{name}` takes reasoning; set models."{name}".thinking = "adaptive" (Claude 4.6 '
        'and later) or "budget" (Claude 3.7 to 4.5), or reasoning_effort = "off"',
    )


def parse_config(text: str, *, path: Path | None = None, data_dir: Path | None = None) -> AppConfig:
    """Parse config.toml text; raises ConfigError with the line of the problem."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"line (\d+)", str(error))
        raise ConfigError(
            f"not valid TOML: {error}", path, int(found.group(1)) if found else None
        ) from error
    try:
        parsed = _ConfigFile.model_validate(raw)
    except ValidationError as error:
        loc, message = first_error(error)
        raise ConfigError(message, path, _locate(text, loc)) from error

    providers = _implicit_providers()
    for name, table in parsed.providers.items():
        kind = table.kind or (name if name in IMPLICIT_PROVIDERS else None)
        if kind is None:
            raise ConfigError(
                f"providers.{name}: `kind` is required (anthropic, openai or openai-compatible)",
                path,
                _locate(text, ("providers", name)),
            )
        if kind == "openai-compatible" and not table.base_url:
            raise ConfigError(
                f"providers.{name}: an openai-compatible provider needs `base_url`",
                path,
                _locate(text, ("providers", name)),
            )
        providers[name] = ProviderConfig(kind=kind, **table.model_dump(exclude={"kind"}))
    for name, model in parsed.models.items():
        if model.provider is not None and model.provider not in providers:
            raise ConfigError(
                f'models."{name}".provider: no provider named `{model.provider}`',
                path,
                _locate(text, ("models", name, "provider")),
            )
        problem = _thinking_problem(name, model, providers)
        if problem is not None:
            key, message = problem
            raise ConfigError(message, path, _locate(text, ("models", name, key)))
    return AppConfig(
        default_model=parsed.defaults.model or None,
        providers=providers,
        models=parsed.models,
        compaction=parsed.compaction,
        mcp_servers=_checked_mcp_servers(parsed.mcp_servers, text, path),
        data_dir=data_dir,
    )


def _checked_mcp_servers(
    servers: dict[str, McpServerConfig], text: str, path: Path | None
) -> dict[str, McpServerConfig]:
    for name in servers:
        try:
            check_server_name(name)
        except ValueError as error:
            raise ConfigError(str(error), path, _locate(text, ("mcp_servers", name))) from error
    return servers


def config_path(data_dir: Path) -> Path:
    return Path(data_dir) / CONFIG_FILE


def load_config(data_dir: Path) -> AppConfig:
    """The configuration in `data_dir` (defaults when there is no config.toml yet)."""
    path = config_path(data_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return AppConfig(data_dir=Path(data_dir))
    except UnicodeDecodeError as error:
        raise ConfigError("not UTF-8 text", path) from error
    return parse_config(text, path=path, data_dir=Path(data_dir))


# --- the file a first run writes (see `foldline.config_toml.ensure_config`) ---------


DEFAULT_CONFIG_TEXT = """\
# Foldline configuration. Edit by hand or in Settings; every setting is described in
# Foldline's docs/configuration.md.
# API keys: Settings stores them in the OS keyring (or a 0600 file when there is none);
# ANTHROPIC_API_KEY and OPENAI_API_KEY in the environment are used too.

[defaults]
# model = "claude-sonnet-5-5"

[providers.anthropic]            # also reads ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL
[providers.openai]               # also reads OPENAI_API_KEY / OPENAI_BASE_URL

# A local server speaking the OpenAI API (Ollama, LM Studio, llama.cpp, vLLM):
# [providers.local]
# kind = "openai-compatible"
# base_url = "http://127.0.0.1:11434/v1"

# Limits for models the catalog does not know (these also win over the catalog):
# [models."my-model"]
# provider = "local"
# context_window = 32768
# max_output_tokens = 4096
# working_budget = 200000       # fold at this many input tokens, not at the full window
                                 # (cost per turn and answer quality on long inputs)
# vision = true                 # it takes images, attached or from tools (default: false here;
                                 # OpenAI's and Anthropic's own models by family)

[compaction]
auto = true
prune = true
threshold = 0.80                 # fraction of the input budget
prepare_threshold = 0.75         # from here the next fold's summary is written in the background
target = 0.50
keep_recent_tokens = 8000
keep_recent_share = 0.10         # an automatic fold keeps at most this share of the budget verbatim
person_words_share = 0.10        # the person's own messages kept word for word after a fold
recall_conversations = "project" # other conversations the model may search: project | all | off
strategy = "structured"          # or "narrative"
tool_result_token_cap = 4000
model = ""                       # optional cheaper summarizer model
auto_title = true                # the summarizer titles a conversation after its first answer
"""


# --- providers: base URL and key with the environment applied ---------------------


def provider_config(config: AppConfig, name: str) -> ProviderConfig:
    provider = config.providers.get(name)
    if provider is None:
        raise ConfigError(f"no provider named `{name}` in config.toml")
    return provider


def effective_base_url(
    config: AppConfig, name: str
) -> tuple[str | None, Literal["env", "config"] | None]:
    """(base URL, "env" | "config" | None) for provider `name`."""
    provider = provider_config(config, name)
    variable = BASE_URL_ENV.get(name) if provider.kind == name else None
    if variable and os.environ.get(variable, "").strip():
        return os.environ[variable].strip(), "env"
    if provider.base_url:
        return provider.base_url, "config"
    return None, None


def key_env_var(config: AppConfig, name: str) -> str | None:
    """The environment variable read for provider `name`'s key, if any."""
    provider = provider_config(config, name)
    if provider.api_key_env:
        return provider.api_key_env
    return KEY_ENV.get(name) if provider.kind == name else None


def find_provider_key(
    config: AppConfig, name: str
) -> tuple[str, Literal["env", "keyring", "file", "config"]] | None:
    """(key, "env" | "keyring" | "file" | "config") for provider `name`, or None."""
    provider = provider_config(config, name)
    found = find_api_key(config.data_dir, name, env_var=key_env_var(config, name) or "")
    if found is not None:
        return found.value, found.source
    if provider.api_key:
        return provider.api_key, "config"
    return None


def default_model(config: AppConfig) -> str | None:
    return config.default_model or None
