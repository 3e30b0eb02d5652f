"""The models each configured provider says it serves, remembered for a day.

Discovery (`foldline.providers.discovery`) asks the providers; this module holds what they
answered: one `ProviderListing` per provider, kept in `ModelDirectory` and cached in
`<data-dir>/models-cache.json` so a start does not wait for the network and an offline
start still knows yesterday's list. A listing records its last failure too, so the UI can
say when the list it shows may be stale.

Times are plain epoch seconds passed in by the caller (the server's clock), so the rules
here are testable without one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from foldline.providers.catalog import Lifecycle, name_candidates

log = logging.getLogger("foldline.providers")

CACHE_FILE = "models-cache.json"
MAX_AGE_SECONDS = 24 * 60 * 60
"""A listing older than a day is fetched again at the next start."""

_LIFECYCLES: frozenset[str] = frozenset({"active", "deprecated", "retired"})
_LEARNED_FIELDS = frozenset(
    {
        "context_window",
        "server",
        "window_source",
        "max_context",
        "slots",
        "interrupts",
        "tools",
        "vision",
        "tokenizer",
        "streams_usage",
        "refuses_tools",
    }
)


@dataclass(frozen=True)
class ListedModel:
    """One model as its provider lists it; None where the provider does not say."""

    id: str
    display_name: str | None = None
    context_window: int | None = None
    """Anthropic's `max_input_tokens`; OpenAI's list has no limits."""
    max_output_tokens: int | None = None
    lifecycle: Lifecycle | None = None
    line: str | None = None
    """The model line (e.g. "sonnet") the provider groups it in."""
    created_at: str | None = None
    # What a local server said about the model when asked (`providers.server_facts`);
    # all None for hosted providers and for servers not asked yet.
    server: str | None = None
    """The kind of local server ("llama.cpp", "ollama", ...)."""
    window_source: str | None = None
    """Where `context_window` was read ("llama.cpp /props n_ctx", "overflow error")."""
    max_context: int | None = None
    slots: int | None = None
    interrupts: bool | None = None
    tools: bool | None = None
    vision: bool | None = None
    tokenizer: str | None = None
    streams_usage: bool | None = None
    refuses_tools: bool | None = None
    """The server answered a request with tools with a refusal (a model without tool
    support on Ollama, llama.cpp without `--jinja`): turns are sent without them."""
    learned_at: float | None = None
    """When the server was asked (epoch seconds)."""


@dataclass(frozen=True)
class ProviderListing:
    provider: str
    kind: str
    models: tuple[ListedModel, ...] = ()
    fetched_at: float | None = None
    """When the provider last answered with its list; None if it never has."""
    attempted_at: float | None = None
    error: str | None = None
    """Why the last attempt failed (offline, a refused key); None after a success."""

    def is_fresh(self, now: float) -> bool:
        return (
            self.error is None
            and self.fetched_at is not None
            and now - self.fetched_at < MAX_AGE_SECONDS
        )


@dataclass
class ModelDirectory:
    """Every provider's listing, with lookups that allow snapshot suffixes and aliases.

    Anthropic lists dated ids (`claude-sonnet-4-5-20250929`) while people and configs use
    the alias (`claude-sonnet-4-5`), so each listed id is also indexed under its names
    without the suffix; the first listed (the provider lists newest first) wins.
    """

    path: Path | None = None
    listings: dict[str, ProviderListing] = field(default_factory=dict)
    _index: dict[str, dict[str, ListedModel]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        for listing in self.listings.values():
            self._reindex(listing)

    # --- reading -----------------------------------------------------------------------

    def listing(self, provider: str) -> ProviderListing | None:
        with self._lock:
            return self.listings.get(provider)

    def find(self, provider: str, model: str) -> ListedModel | None:
        """The listed model `model` names at `provider`, or None."""
        with self._lock:
            index = self._index.get(provider)
        if not index:
            return None
        for name in name_candidates(model):
            found = index.get(name)
            if found is not None:
                return found
        return None

    # --- writing -----------------------------------------------------------------------

    def record_success(
        self, provider: str, kind: str, models: Iterable[ListedModel], now: float
    ) -> ProviderListing:
        with self._lock:
            previous = self.listings.get(provider)
        learned = {
            model.id: model
            for model in (previous.models if previous is not None else ())
            if model.learned_at is not None
        }
        # A new list keeps what each server said about its models: the list itself
        # (`/v1/models`) tells none of it.
        kept = tuple(_with_learned(model, learned.get(model.id)) for model in models)
        listing = ProviderListing(
            provider, kind, kept, fetched_at=now, attempted_at=now, error=None
        )
        self._put(listing)
        return listing

    def record_failure(self, provider: str, kind: str, error: str, now: float) -> ProviderListing:
        """Keep the last good list (better than the catalog alone) and note the failure."""
        with self._lock:
            previous = self.listings.get(provider)
        base = previous if previous is not None and previous.kind == kind else None
        listing = (
            replace(base, attempted_at=now, error=error)
            if base is not None
            else ProviderListing(provider, kind, attempted_at=now, error=error)
        )
        self._put(listing)
        return listing

    def record_learned(
        self, provider: str, kind: str, model_id: str, learned: dict[str, Any], now: float
    ) -> ListedModel:
        """Merge what a server said about `model_id` (fields of `ListedModel`) into its
        listing, adding the model when the list did not have it yet."""
        fields = {k: v for k, v in learned.items() if k in _LEARNED_FIELDS}
        with self._lock:
            previous = self.listings.get(provider)
        base = (
            previous
            if previous is not None and previous.kind == kind
            else ProviderListing(provider, kind)
        )
        models = list(base.models)
        for index, model in enumerate(models):
            if model.id == model_id:
                updated = replace(model, **fields, learned_at=now)
                models[index] = updated
                break
        else:
            updated = ListedModel(id=model_id, **fields, learned_at=now)
            models.append(updated)
        self._put(replace(base, models=tuple(models)))
        return updated

    def _put(self, listing: ProviderListing) -> None:
        with self._lock:
            self.listings[listing.provider] = listing
            self._reindex(listing)
        self.save()

    def _reindex(self, listing: ProviderListing) -> None:
        index: dict[str, ListedModel] = {}
        for model in listing.models:
            for name in name_candidates(model.id):
                index.setdefault(name, model)
        self._index[listing.provider] = index

    # --- the cache file ----------------------------------------------------------------

    def save(self) -> None:
        if self.path is None:
            return
        with self._lock:
            data = {"providers": [asdict(listing) for listing in self.listings.values()]}
        temporary = self.path.with_suffix(".tmp")
        try:
            temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as error:
            # A cache that cannot be written costs a fetch at the next start, nothing more.
            log.warning("could not write %s: %s", self.path, error)

    @classmethod
    def load(cls, data_dir: Path | None) -> ModelDirectory:
        """The cached listings in `data_dir` (an empty directory when there are none or the
        file is unreadable: it is only a cache)."""
        if data_dir is None:
            return cls()
        path = Path(data_dir) / CACHE_FILE
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            listings = [_listing_from_json(item) for item in raw["providers"]]
        except FileNotFoundError:
            return cls(path=path)
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("ignoring the unreadable model cache %s: %s", path, error)
            return cls(path=path)
        return cls(path=path, listings={listing.provider: listing for listing in listings})


def _with_learned(model: ListedModel, learned: ListedModel | None) -> ListedModel:
    if learned is None or model.learned_at is not None:
        return model
    values = {name: getattr(learned, name) for name in _LEARNED_FIELDS}
    if model.context_window:
        values.pop("context_window")
    return replace(model, **values, learned_at=learned.learned_at)


_FIELD_NAMES = frozenset(f.name for f in fields(ListedModel))


def _listing_from_json(item: dict[str, Any]) -> ProviderListing:
    models = []
    for model in item.get("models") or ():
        lifecycle = model.get("lifecycle")
        known = {k: v for k, v in model.items() if k in _FIELD_NAMES}
        models.append(
            ListedModel(**{**known, "lifecycle": lifecycle if lifecycle in _LIFECYCLES else None})
        )
    return ProviderListing(
        provider=str(item["provider"]),
        kind=str(item["kind"]),
        models=tuple(models),
        fetched_at=item.get("fetched_at"),
        attempted_at=item.get("attempted_at"),
        error=item.get("error"),
    )
