"""A server's questions to the person (MCP elicitation), waiting for an answer.

A server may ask, in the middle of a tool call, for a few values (form mode: a flat JSON
schema of strings, numbers, booleans and enums) or for the person to visit a page (URL
mode). The question is shown in the chat on the card of the call that caused it, with
the server named; the answer is Submit (the form's values), Decline or Cancel. A URL is
never opened without the person's click. Like approvals, nothing times out here: the
person may take their time, and Stop abandons the wait (the server reads "cancel").

`form_defaults` and `check_answer` are the form's rules, shared by the chat's form and
the conformance driver: the schema's defaults pre-fill the form (so Submit on an
untouched form sends them), and an answer is checked against the schema before it goes
to the server.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import webbrowser
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

Action = Literal["accept", "decline", "cancel"]
Value = str | int | float | bool | list[str] | None


WEB_SCHEMES = frozenset({"http", "https"})
"""The only pages a server's question may open: the system's URL opener would run
anything else (`javascript:`, `file:`, `data:`, `vbscript:`, `ms-settings:`, `smb:`, a
UNC path), and a server is not trusted to decide what runs on the person's machine."""


def is_web_page(url: str) -> bool:
    """Whether `url` is an http(s) address with a host, and nothing a URL opener could
    read another way (spaces, control characters, backslashes)."""
    if not url or len(url) > 8192:
        return False
    if any(ch.isspace() or ord(ch) < 32 or ch == "\\" for ch in url):
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    return parts.scheme.lower() in WEB_SCHEMES and bool(host)


def open_web_page(url: str) -> bool:
    """Open an http(s) page in the system browser; anything else is refused (and
    logged), whoever asked."""
    if not is_web_page(url):
        log.warning("refused to open %r: only http(s) pages are opened", url[:200])
        return False
    return webbrowser.open(url)


class UnknownElicitation(LookupError):
    """No question with that id is waiting in that conversation (HTTP 404)."""


class BadAnswer(ValueError):
    """An answer that does not fit the server's schema (HTTP 400, with the field named)."""


@dataclass(frozen=True)
class Answer:
    action: Action
    content: dict[str, Value] | None = None


@dataclass
class PendingElicitation:
    id: str
    conversation_id: str
    call_id: str
    server: str
    message: str
    mode: Literal["form", "url"]
    schema: dict[str, Any] = field(default_factory=dict)
    url: str | None = None
    future: asyncio.Future[Answer] | None = None


def _enum_values(schema: dict[str, Any]) -> list[Any] | None:
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and all(isinstance(o, dict) for o in options):
            values = [o["const"] for o in options if "const" in o]
            if values:
                return values
    items = schema.get("items")
    if schema.get("type") == "array" and isinstance(items, dict):
        return _enum_values(items)
    return None


def form_defaults(schema: dict[str, Any]) -> dict[str, Value]:
    """The values a form starts with: each property's `default`, where it has one."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {
        name: prop["default"]
        for name, prop in properties.items()
        if isinstance(prop, dict) and "default" in prop
    }


def check_answer(schema: dict[str, Any], content: dict[str, Any]) -> dict[str, Value]:
    """The answer as the server will read it, or `BadAnswer` naming the first problem.

    Numbers typed as text are converted, empty optional fields are left out, and
    properties the schema does not name are refused."""
    found = schema.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    required = set(schema.get("required") or [])
    unknown = sorted(set(content) - set(properties))
    if unknown:
        raise BadAnswer(f"{unknown[0]}: the server did not ask for this field")
    checked: dict[str, Value] = {}
    for name, prop in properties.items():
        value = content.get(name)
        label = prop.get("title") or name if isinstance(prop, dict) else name
        if value is None or value == "" or value == []:
            if name in required:
                raise BadAnswer(f"{label}: required")
            continue
        kind = prop.get("type") if isinstance(prop, dict) else None
        checked[name] = _checked_value(label, kind, prop if isinstance(prop, dict) else {}, value)
    return checked


def _checked_value(label: str, kind: Any, prop: dict[str, Any], value: Any) -> Value:
    if kind in ("number", "integer"):
        try:
            number: int | float = int(value) if kind == "integer" else float(value)
        except (TypeError, ValueError):
            needed = "a whole number" if kind == "integer" else "a number"
            raise BadAnswer(f"{label}: {needed} is needed") from None
        if isinstance(value, float) and kind == "integer" and value != int(value):
            raise BadAnswer(f"{label}: a whole number is needed")
        low, high = prop.get("minimum"), prop.get("maximum")
        if (low is not None and number < low) or (high is not None and number > high):
            raise BadAnswer(f"{label}: must be between {low} and {high}")
        return number
    if kind == "boolean":
        if not isinstance(value, bool):
            raise BadAnswer(f"{label}: yes or no is needed")
        return value
    allowed = _enum_values(prop)
    if kind == "array":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadAnswer(f"{label}: a list of choices is needed")
        if allowed is not None and any(v not in allowed for v in value):
            raise BadAnswer(f"{label}: not one of the choices")
        return list(value)
    if not isinstance(value, str):
        raise BadAnswer(f"{label}: text is needed")
    if allowed is not None and value not in allowed:
        raise BadAnswer(f"{label}: not one of the choices")
    low, high = prop.get("minLength"), prop.get("maxLength")
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        raise BadAnswer(f"{label}: length must be between {low} and {high}")
    return value


class Elicitations:
    """The questions waiting for the person, by conversation and question id."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], PendingElicitation] = {}
        self._ids = itertools.count(1)

    def ask(self, pending: PendingElicitation) -> PendingElicitation:
        pending.id = pending.id or f"el-{next(self._ids)}"
        pending.future = asyncio.get_running_loop().create_future()
        self._pending[(pending.conversation_id, pending.id)] = pending
        return pending

    async def wait(self, pending: PendingElicitation) -> Answer:
        assert pending.future is not None
        try:
            return await pending.future
        finally:
            self._pending.pop((pending.conversation_id, pending.id), None)

    def answer(
        self,
        conversation_id: str,
        elicitation_id: str,
        action: Action,
        content: dict[str, Any] | None = None,
    ) -> PendingElicitation:
        pending = self._pending.get((conversation_id, elicitation_id))
        if pending is None or pending.future is None or pending.future.done():
            raise UnknownElicitation(f"No question {elicitation_id} is waiting here.")
        checked = None
        if action == "accept" and pending.mode == "form":
            checked = check_answer(pending.schema, content or {})
        pending.future.set_result(Answer(action, checked))
        return pending

    def drop(self, conversation_id: str, call_id: str) -> None:
        """Cancel the questions still waiting for one call."""
        for pending in self.waiting(conversation_id):
            if pending.call_id == call_id and pending.future and not pending.future.done():
                pending.future.set_result(Answer("cancel"))

    def waiting(self, conversation_id: str) -> list[PendingElicitation]:
        return [p for p in self._pending.values() if p.conversation_id == conversation_id]
