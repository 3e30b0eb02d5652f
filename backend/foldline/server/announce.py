"""Announcing every change made through the API to the pages watching (`GET …/watch`).

A conversation may be open in several windows; one of them (or another client) pins a
message, switches a branch, undoes a fold, renames or deletes it, and every other window
must show it at once. Rather than each route remembering to say so, this middleware
looks at each request that succeeded: when its route changes a conversation (`CHANGES`)
or the list (`LIST_CHANGES`), it records the change in the chat service's
`ConversationWatch`, with the page that made it (the `X-Foldline-Page` header), after the
answer has been sent. Turns and folds, whose answers are event streams, are announced by
the chat service when they start and end.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from foldline.chat.watching import ConversationWatch

CONVERSATION = "/api/conversations/{conversation_id}"

CHANGES: dict[tuple[str, str], str] = {
    ("POST", "/api/conversations"): "created",
    ("POST", "/api/conversations/import"): "created",
    ("PATCH", CONVERSATION): "updated",
    ("DELETE", CONVERSATION): "deleted",
    ("PUT", f"{CONVERSATION}/active-leaf"): "branch",
    ("POST", f"{CONVERSATION}/handoff"): "handoff",
    ("POST", f"{CONVERSATION}/compactions/{{version}}/undo"): "fold",
    ("POST", f"{CONVERSATION}/compactions/{{version}}/redo"): "fold",
    ("POST", f"{CONVERSATION}/messages/{{message_id}}/pin"): "pins",
    ("DELETE", f"{CONVERSATION}/messages/{{message_id}}/pin"): "pins",
}
"""What each route that changes conversations changes: `created` (a new conversation),
`updated` (title, settings, model, system prompt or project), `deleted`, `branch` (another
version is shown), `handoff` (a conversation continues this one), `fold` (a fold undone
or brought back), `pins`."""

LIST_CHANGES = "/api/projects"
"""Every change under this prefix changes the list's projects (names, members, deletions)."""

LIST_KIND = "project"

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
PAGE_HEADER = b"x-foldline-page"
PAGE_ID = re.compile(r"[A-Za-z0-9-]{1,64}")


def change_of(method: str, route_path: str) -> str | None:
    """The kind of change a successful request to this route makes, or None."""
    if method not in MUTATING:
        return None
    if route_path == LIST_CHANGES or route_path.startswith(f"{LIST_CHANGES}/"):
        return LIST_KIND
    return CHANGES.get((method, route_path))


def page_of(scope: Scope) -> str:
    """The id the page that sent the request gave itself ("" when none or malformed)."""
    for name, value in scope.get("headers", ()):
        if name == PAGE_HEADER:
            text = value.decode("latin-1")
            return text if PAGE_ID.fullmatch(text) else ""
    return ""


class ChangeAnnouncer:
    """After a request that changed a conversation or the list succeeded, tell the watch."""

    def __init__(self, app: ASGIApp, *, watch: ConversationWatch) -> None:
        self.app = app
        self.watch = watch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in MUTATING:
            await self.app(scope, receive, send)
            return
        status = 0

        async def noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, noting_status)
        route: Any = scope.get("route")
        kind = change_of(scope["method"], getattr(route, "path", ""))
        if kind is None or not 200 <= status < 300:
            return
        conversation_id = scope.get("path_params", {}).get("conversation_id")
        self.watch.changed(conversation_id, kind, page_of(scope))
