"""The API's shapes as JSDoc typedefs for the web UI (`frontend/js/types.js`).

The UI has no build step, so it cannot import the pydantic models; instead this module
writes them out as `@typedef`s the UI's functions name in their `@param` tags. The test
suite checks that the committed file equals a fresh generation and that every field the
UI reads through such a tag is one the schemas define, so the server and the UI cannot
drift apart unnoticed. Regenerate after changing a schema:

    python -m foldline.server.typedefs frontend/js/types.js
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from foldline.api import (
    events,
    schemas,
    schemas_context,
    schemas_messages,
    schemas_models,
    schemas_projects,
    schemas_settings,
)
from foldline.api.schemas import ApiModel, RequestModel
from foldline.server.routes import mcp, mcp_catalog, mcp_interaction

SOURCES = (
    schemas,
    schemas_messages,
    schemas_context,
    schemas_models,
    schemas_settings,
    schemas_projects,
    events,
    mcp,
    mcp_interaction,
    mcp_catalog,
)
"""The modules whose API models become typedefs, in this order."""

HEADER = """\
// The shapes of the HTTP API and its events, generated from the server's pydantic models
// (backend/foldline/server/typedefs.py). Do not edit: regenerate with
//   python -m foldline.server.typedefs frontend/js/types.js
// The UI's functions name these types in JSDoc tags, and `tsc --checkJs` checks the UI
// against them (frontend/jsconfig.json). This file is a script, not a module, so that its
// typedefs are global to every module without an import; the page never loads it.
"""


def api_models() -> list[type[ApiModel]]:
    """Every response, event and request model of the API, each once, in source order."""
    found: list[type[ApiModel]] = []
    for module in SOURCES:
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, ApiModel)
                and value not in (ApiModel, RequestModel)
                and value not in found
            ):
                found.append(value)
    return found


RENAMED = {"MessageEvent": "MessageEventBody", "ErrorEvent": "ErrorEventBody"}
"""Models whose names the browser already gives to its own types. The typedefs are global
to the UI's modules, so a typedef named `ErrorEvent` would stand for the DOM's event in
some places and the API's body in others; these get a name of their own."""


def typedef_name(model: type[BaseModel]) -> str:
    """The name of a model's typedef in the UI."""
    return RENAMED.get(model.__name__, model.__name__)


def wire_name(model: type[BaseModel], field: str) -> str:
    info = model.model_fields[field]
    return info.serialization_alias or info.alias or field


def js_type(annotation: Any) -> str:
    """The JSDoc type of a Python annotation (models by their name)."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if annotation is Any:
        return "*"
    if annotation is None or annotation is type(None):
        return "null"
    if annotation is str:
        return "string"
    if annotation in (int, float):
        return "number"
    if annotation is bool:
        return "boolean"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return typedef_name(annotation)
    if origin is Annotated:
        return js_type(args[0])
    if origin is Literal:
        return "|".join(f'"{a}"' if isinstance(a, str) else str(a).lower() for a in args)
    if origin in (Union, types.UnionType):
        return "|".join(js_type(a) for a in args)
    if origin in (list, tuple):
        inner = js_type(args[0]) if args else "*"
        return f"Array<{inner}>"
    if origin is dict:
        return f"Object<string, {js_type(args[1])}>"
    raise TypeError(f"no JSDoc type for {annotation!r}")


def optional_fields(model: type[BaseModel]) -> set[str]:
    """Fields that may be absent on the wire: those with a default in a model whose own
    serializer leaves them out (a tool result's `fullOutput`, `done`'s `cancelled`)."""
    if not model.__pydantic_decorators__.model_serializers:
        return set()
    return {name for name, info in model.model_fields.items() if not info.is_required()}


def _doc_line(text: str | None) -> str:
    return " ".join((text or "").split())


def typedef(model: type[BaseModel]) -> Iterator[str]:
    yield "/**"
    doc = _doc_line(model.__doc__ if model.__doc__ != BaseModel.__doc__ else None)
    if doc:
        yield f" * {doc}"
    yield f" * @typedef {{Object}} {typedef_name(model)}"
    optional = optional_fields(model)
    for name, info in model.model_fields.items():
        wire = wire_name(model, name)
        label = f"[{wire}]" if name in optional else wire
        note = _doc_line(info.description)
        yield f" * @property {{{js_type(info.annotation)}}} {label}{' ' + note if note else ''}"
    yield " */"


def render() -> str:
    """The whole of `frontend/js/types.js`."""
    blocks = [HEADER]
    for model in api_models():
        blocks.append("\n".join(typedef(model)) + "\n")
    parts = "|".join(js_type(a) for a in get_args(get_args(schemas_messages.PartOut)[0]))
    blocks.append(f"/** @typedef {{{parts}}} PartOut One part of a message, by `kind`. */\n")
    lines = ["/**", " * The body of each server-sent event, by event name.", " * @typedef {{"]
    entries = [
        f' *   "{name}": {typedef_name(body)},' for name, body in events.EVENT_BODIES.items()
    ]
    lines += [*entries, " * }} EventBodies", " */"]
    blocks.append("\n".join(lines) + "\n")
    blocks.append(stream_event_typedef())
    return "\n".join(blocks)


def stream_event_typedef() -> str:
    """`StreamEvent`: one event of a turn's or a fold's stream as `readEvents` yields it, a
    union tagged by `name`, so that checking `event.name` gives `event.data` its body's type
    (a `switch` on a destructured `name` narrows `data` too)."""
    lines = [
        "/**",
        " * One event of a turn's or a fold's stream: its name and its body, tagged by `name`.",
        " * @typedef {(",
    ]
    entries = [
        f' *   {"| " if i else "  "}{{name: "{name}", data: {typedef_name(body)}}}'
        for i, (name, body) in enumerate(events.EVENT_BODIES.items())
    ]
    lines += [*entries, " * )} StreamEvent", " */"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m foldline.server.typedefs frontend/js/types.js", file=sys.stderr)
        return 2
    Path(argv[0]).write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
