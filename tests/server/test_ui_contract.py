"""The web UI reads only what the API sends.

`frontend/js/types.js` holds the API's shapes as JSDoc typedefs generated from the
pydantic models; the UI's functions name them in `@param` tags (and `state.js` in the
`@property` tags of its `AppState`). These tests fail when the committed typedefs are
stale, when the UI reads a field through such a tag that the schemas do not define, or
when a schema drops a field the UI reads (the read no longer resolves). `tsc --checkJs`
(tests/test_frontend_types.py) checks every read of a typed value; this check stays as
the one that needs no Node.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from foldline.api.events import EVENT_BODIES, Done
from foldline.chat import events as ev
from foldline.chat.events import EventName
from foldline.server.typedefs import api_models, render, typedef_name, wire_name

FRONTEND_JS = Path(__file__).resolve().parents[2] / "frontend" / "js"
MODELS: dict[str, type[BaseModel]] = {typedef_name(model): model for model in api_models()}

_IDENT = r"[A-Za-z_$][\w$]*"
_PARAM = re.compile(rf"@param\s+\{{([^}}]+)\}}\s+\[?({_IDENT})")
_STATE_FIELD = re.compile(rf"@property\s+\{{([^}}]+)\}}\s+({_IDENT})")
_CASE = re.compile(r'case\s+"([a-z._]+)":')


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The one model an annotation holds, null aside (`X | None` → X); else None."""
    if get_origin(annotation) is Annotated:
        return _model_of(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        models = [m for a in get_args(annotation) if (m := _model_of(a)) is not None]
        others = [a for a in get_args(annotation) if a is not type(None)]
        return models[0] if len(models) == 1 and len(others) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {wire_name(model, name): info.annotation for name, info in model.model_fields.items()}


def _type_named(text: str) -> type[BaseModel] | None:
    names = [part.strip() for part in text.split("|") if part.strip() not in ("null", "")]
    if len(names) == 1 and names[0] in MODELS:
        return MODELS[names[0]]
    return None


@dataclass(frozen=True)
class Read:
    where: str
    path: str
    problem: str


def unknown_reads(
    source: str, root: str, model: type[BaseModel], where: str
) -> tuple[list[Read], int]:
    """Every `root.a.b…` (or `root?.a`) in `source` whose fields `model` does not define,
    followed through nested models as far as the types are models; and how many reads
    were checked."""
    problems = []
    pattern = re.compile(rf"(?<![\w$.]){re.escape(root)}((?:\??\.{_IDENT})+)")
    matches = list(pattern.finditer(source))
    for match in matches:
        current: type[BaseModel] | None = model
        for name in re.findall(_IDENT, match.group(1)):
            if current is None:
                break
            fields = _fields(current)
            if name not in fields:
                path = f"{root}{match.group(1)}"
                problems.append(Read(where, path, f"{current.__name__} has no `{name}`"))
                break
            current = _model_of(fields[name])
    return problems, len(matches)


def _function_body(source: str, start: int) -> str:
    """The text of the first `{…}` block at or after `start` (braces balanced)."""
    opening = source.index("{", source.index(")", start))
    depth = 0
    for index in range(opening, len(source)):
        if source[index] == "{":
            depth += 1
        elif source[index] == "}":
            depth -= 1
            if depth == 0:
                return source[opening : index + 1]
    raise AssertionError("unbalanced braces")


def _doc_blocks(source: str) -> list[tuple[str, int]]:
    return [(m.group(0), m.end()) for m in re.finditer(r"/\*\*.*?\*/", source, re.S)]


def ui_problems(files: dict[str, str]) -> tuple[list[Read], int]:
    """The reads that do not resolve, and how many reads were checked."""
    problems: list[Read] = []
    checked = 0

    def check(source: str, root: str, model: type[BaseModel], where: str) -> None:
        nonlocal checked
        found, count = unknown_reads(source, root, model, where)
        problems.extend(found)
        checked += count

    state_types = {
        name: model
        for text, name in _STATE_FIELD.findall(files.get("state.js", ""))
        if (model := _type_named(text)) is not None
    }
    for file, source in files.items():
        for root, model in state_types.items():
            check(source, f"state.{root}", model, file)
        for doc, end in _doc_blocks(source):
            params = _PARAM.findall(doc)
            if not params or not re.match(r"\s*(export\s+)?(async\s+)?function", source[end:]):
                continue
            body = _function_body(source, end)
            where = f"{file}: {source[end:].split('(', 1)[0].split()[-1]}"
            for type_text, name in params:
                if type_text.startswith("EventBodies") or type_text == "StreamEvent":
                    # One body per `case "event.name":` of the function's switch; a
                    # `StreamEvent`'s body is its `data`.
                    root = "data" if type_text == "StreamEvent" else name
                    cases = list(_CASE.finditer(body))
                    for case, following in zip(cases, [*cases[1:], None], strict=True):
                        block = body[case.end() : following.start() if following else None]
                        check(block, root, EVENT_BODIES[case.group(1)], where)
                elif (model := _type_named(type_text)) is not None:
                    check(body, name, model, where)
    return problems, checked


def _ui_sources() -> dict[str, str]:
    return {
        path.name: path.read_text(encoding="utf-8")
        for path in sorted(FRONTEND_JS.glob("*.js"))
        if path.name != "types.js"
    }


def test_the_committed_typedefs_are_generated_from_the_schemas() -> None:
    committed = (FRONTEND_JS / "types.js").read_text(encoding="utf-8")
    assert committed == render(), (
        "frontend/js/types.js is stale: run "
        "`python -m foldline.server.typedefs frontend/js/types.js`"
    )


def test_every_field_the_ui_reads_is_defined_by_the_schemas() -> None:
    problems, checked = ui_problems(_ui_sources())
    assert checked >= 150, "the UI's @param/@type tags naming API types went missing"
    assert problems == []


def test_every_event_the_ui_handles_exists() -> None:
    events = _ui_sources()["turn-events.js"]
    handled = set(_CASE.findall(_function_body(events, events.index("function applyEvent("))))
    assert handled <= set(EVENT_BODIES), handled - set(EVENT_BODIES)
    assert {"message.created", "assistant.delta", "compaction.completed"} <= handled


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        # A field the schema lacks, directly and behind a nested model.
        ("function f(m) { return m.idx + m.status; }", ["m.idx"]),
        ("function f(m) { return m?.parts.length + m.usage?.total; }", []),
        ("function f(c) { return c.compaction?.summarizedRange.count; }", ["…"]),
    ],
)
def test_the_check_finds_reads_the_schemas_do_not_define(snippet: str, expected: list[str]) -> None:
    model = "MessageOut" if "(m)" in snippet else "ConversationOut"
    root = "m" if "(m)" in snippet else "c"
    source = f"/**\n * @param {{{model}}} {root}\n */\n{snippet}\n"
    problems, checked = ui_problems({"x.js": source})
    assert checked == snippet.count(f"{root}.") + snippet.count(f"{root}?.")
    if expected == ["…"]:
        assert [p.problem for p in problems] == ["SummarizedRangeOut has no `count`"]
    else:
        assert [p.path for p in problems] == expected


def test_the_check_follows_each_event_case_to_its_own_body() -> None:
    source = """
/**
 * @param {keyof EventBodies} name
 * @param {EventBodies[keyof EventBodies]} data
 */
function apply(name, data) {
  switch (name) {
    case "assistant.delta":
      return data.text + data.messageId;
    case "prune.completed":
      return data.text;
  }
}
"""
    problems, checked = ui_problems({"x.js": source})
    assert checked == 3
    assert [p.problem for p in problems] == ["PruneCompleted has no `text`"]


def test_every_event_name_has_one_body_and_a_wrong_body_is_refused() -> None:
    assert set(get_args(EventName)) == set(EVENT_BODIES)
    with pytest.raises(TypeError, match=r"assistant\.delta carries AssistantDelta"):
        ev.AssistantDelta(Done())  # type: ignore[arg-type]
    # The wire form is the body's camelCase dump; `done` after Stop says so, else `{}`.
    assert ev.Done(Done(cancelled=True)).data == {"cancelled": True}
    assert ev.Done().data == {}
