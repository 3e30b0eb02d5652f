"""The models endpoints of `FakeProviderServer`, shaped and checked like the real APIs.

Both APIs serve `GET /v1/models` (and `GET /v1/models/{id}`); a request carrying the
`anthropic-version` header (which the Anthropic SDK always sends and the API requires) is
answered in Anthropic's shape, any other in OpenAI's.

- Anthropic: pages of `ModelInfo` (`id`, `type`, `display_name`, `created_at`,
  `max_input_tokens`, `max_tokens`, `lifecycle`, `line`, `deprecated_at`, `retires_at`),
  newest first, with `limit` (1-1000, default 20), `after_id` / `before_id` cursors and a
  `lifecycle[]` filter that leaves retired models out unless asked for; unknown query
  parameters and bad values are a 400 `invalid_request_error`.
- OpenAI: `{"object": "list", "data": [Model]}` with `id`, `object`, `created`,
  `owned_by` (and `shutdown_date` where one is announced); retired models are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from foldline.testing import wire_errors
from foldline.testing.codec import Wire
from foldline.testing.wire_errors import WireError


class ModelsServerState(Protocol):
    """What the models endpoints read and record on the server that owns them
    (`FakeProviderServer`), so this module never imports the server built on it."""

    api_key: str | None

    def listed_models(self) -> list[FakeModel]: ...

    def record_listing(self, wire: Wire, path: str, query: str) -> None: ...


FakeLifecycle = Literal["active", "deprecated", "retired"]
_LIFECYCLES = ("active", "deprecated", "retired")
_ANTHROPIC_QUERY = frozenset({"limit", "after_id", "before_id", "lifecycle[]"})
DEFAULT_CREATED_AT = "2026-01-01T00:00:00Z"


@dataclass(frozen=True)
class FakeModel:
    """One model in the fake provider's list."""

    id: str
    max_input_tokens: int | None = None
    max_tokens: int | None = None
    lifecycle: FakeLifecycle = "active"
    line: str | None = None
    display_name: str | None = None
    created_at: str = DEFAULT_CREATED_AT
    """RFC 3339; the lists are ordered by it, newest first."""
    deprecated_at: str | None = None
    retires_at: str | None = None
    owned_by: str = "openai"
    shutdown_date: str | None = None
    """OpenAI's announced shutdown date (YYYY-MM-DD), if any."""

    def anthropic_json(self) -> dict[str, Any]:
        return {
            "type": "model",
            "id": self.id,
            "display_name": self.display_name or self.id,
            "created_at": self.created_at,
            "max_input_tokens": self.max_input_tokens,
            "max_tokens": self.max_tokens,
            "lifecycle": self.lifecycle,
            "line": self.line,
            "deprecated_at": self.deprecated_at,
            "retires_at": self.retires_at,
        }

    def openai_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "object": "model",
            "created": int(datetime.fromisoformat(self.created_at).timestamp()),
            "owned_by": self.owned_by,
        }
        if self.shutdown_date is not None:
            body["shutdown_date"] = self.shutdown_date
        return body


SAMPLE_CLAUDE_MODELS: tuple[FakeModel, ...] = (
    FakeModel(
        "claude-sonnet-5",
        1_000_000,
        128_000,
        line="sonnet",
        display_name="Claude Sonnet 5",
        created_at="2026-06-30T00:00:00Z",
    ),
    FakeModel(
        "claude-sonnet-4-5-20250929",
        200_000,
        64_000,
        lifecycle="deprecated",
        line="sonnet",
        display_name="Claude Sonnet 4.5",
        deprecated_at="2026-08-01T00:00:00Z",
        retires_at="2027-02-01T00:00:00Z",
        created_at="2025-09-29T00:00:00Z",
    ),
    FakeModel(
        "claude-3-7-sonnet-20250219",
        200_000,
        64_000,
        lifecycle="retired",
        line="sonnet",
        deprecated_at="2025-10-28T00:00:00Z",
        created_at="2025-02-19T00:00:00Z",
    ),
)
"""A small Anthropic list for tests: a current 1M-window model, a deprecated and a
retired one, dated ids as the API spells them."""


def _newest_first(models: list[FakeModel]) -> list[FakeModel]:
    return sorted(models, key=lambda m: (datetime.fromisoformat(m.created_at), m.id), reverse=True)


def _is_anthropic(request: Request) -> bool:
    return "anthropic-version" in {k.lower() for k in request.headers}


def _authorized(server: ModelsServerState, request: Request, wire: Wire) -> bool:
    if server.api_key is None:
        return True
    bearer = request.headers.get("authorization") == f"Bearer {server.api_key}"
    if wire == "anthropic":
        return bearer or request.headers.get("x-api-key") == server.api_key
    return bearer


def _error(error: WireError) -> Response:
    return Response(
        error.encoded(),
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )


def _anthropic_page(models: list[FakeModel], request: Request) -> dict[str, Any] | WireError:
    params = request.query_params
    unknown = set(params.keys()) - _ANTHROPIC_QUERY
    if unknown:
        extra = sorted(unknown)[0]
        return wire_errors.bad_request("anthropic", f"{extra}: Extra inputs are not permitted")
    limit_text = params.get("limit", "20")
    try:
        limit = int(limit_text)
    except ValueError:
        return wire_errors.bad_request("anthropic", "limit: Input should be a valid integer")
    if not 1 <= limit <= 1000:
        return wire_errors.bad_request("anthropic", "limit: must be between 1 and 1000")
    stages = params.getlist("lifecycle[]") or ["active", "deprecated"]
    if len(stages) > 3 or any(stage not in _LIFECYCLES for stage in stages):
        return wire_errors.bad_request(
            "anthropic", "lifecycle: each value must be one of 'active', 'deprecated', 'retired'"
        )
    if "after_id" in params and "before_id" in params:
        return wire_errors.bad_request("anthropic", "Only one of after_id and before_id may be set")
    listed = [m for m in _newest_first(models) if m.lifecycle in stages]
    ids = [m.id for m in listed]
    if "after_id" in params:
        cursor = params["after_id"]
        if cursor not in ids:
            return wire_errors.bad_request("anthropic", f"after_id: no model {cursor!r}")
        rest = listed[ids.index(cursor) + 1 :]
        page, has_more = rest[:limit], len(rest) > limit
    elif "before_id" in params:
        cursor = params["before_id"]
        if cursor not in ids:
            return wire_errors.bad_request("anthropic", f"before_id: no model {cursor!r}")
        rest = listed[: ids.index(cursor)]
        page, has_more = rest[-limit:], len(rest) > limit
    else:
        page, has_more = listed[:limit], len(listed) > limit
    return {
        "data": [m.anthropic_json() for m in page],
        "has_more": has_more,
        "first_id": page[0].id if page else None,
        "last_id": page[-1].id if page else None,
    }


async def handle_models(server: ModelsServerState, request: Request) -> Response:
    """`GET /v1/models` in the asking API's shape."""
    wire: Wire = "anthropic" if _is_anthropic(request) else "openai"
    server.record_listing(wire, request.url.path, str(request.url.query))
    if not _authorized(server, request, wire):
        return _error(wire_errors.unauthorized(wire))
    models = server.listed_models()
    if wire == "openai":
        if request.query_params:
            name = next(iter(request.query_params.keys()))
            message = f"Unrecognized request argument supplied: {name}"
            return _error(wire_errors.openai_error(400, message))
        data = [m.openai_json() for m in _newest_first(models) if m.lifecycle != "retired"]
        return JSONResponse({"object": "list", "data": data})
    page = _anthropic_page(models, request)
    if isinstance(page, WireError):
        return _error(page)
    return JSONResponse(page)


async def handle_model(server: ModelsServerState, request: Request) -> Response:
    """`GET /v1/models/{model_id}`: one model, or the API's 404."""
    wire: Wire = "anthropic" if _is_anthropic(request) else "openai"
    model_id = request.path_params["model_id"]
    server.record_listing(wire, request.url.path, str(request.url.query))
    if not _authorized(server, request, wire):
        return _error(wire_errors.unauthorized(wire))
    for model in server.listed_models():
        if model.id == model_id and (wire == "anthropic" or model.lifecycle != "retired"):
            body = model.anthropic_json() if wire == "anthropic" else model.openai_json()
            return JSONResponse(body)
    return _error(wire_errors.unknown_model(wire, model_id))
