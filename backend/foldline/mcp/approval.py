"""Calls waiting for the person's decision: Allow once, Always allow this tool, Deny.

A call with `approval = "ask"` registers here and waits; the approval route answers it
by `callId`. Only the conversation the call belongs to may answer it, and only once.
Nothing times out here: the person may take their time, and Stop (cancelling the turn)
abandons the wait.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

Decision = Literal["allow", "always", "deny"]


class UnknownApproval(LookupError):
    """No call with that id is waiting in that conversation (HTTP 404)."""


@dataclass
class PendingApproval:
    conversation_id: str
    call_id: str
    server: str
    tool: str
    future: asyncio.Future[Decision]
    name: str = ""
    """The name the model called (`SERVER__TOOL`)."""
    arguments: dict[str, Any] = field(default_factory=dict)


class Approvals:
    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], PendingApproval] = {}

    def ask(
        self,
        conversation_id: str,
        call_id: str,
        server: str,
        tool: str,
        *,
        name: str = "",
        arguments: dict[str, Any] | None = None,
    ) -> PendingApproval:
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        pending = PendingApproval(
            conversation_id, call_id, server, tool, future, name, dict(arguments or {})
        )
        self._pending[(conversation_id, call_id)] = pending
        return pending

    async def wait(self, pending: PendingApproval) -> Decision:
        try:
            return await pending.future
        finally:
            self._pending.pop((pending.conversation_id, pending.call_id), None)

    def decide(self, conversation_id: str, call_id: str, decision: Decision) -> PendingApproval:
        pending = self._pending.get((conversation_id, call_id))
        if pending is None or pending.future.done():
            raise UnknownApproval(f"No tool call {call_id} is waiting for approval here.")
        pending.future.set_result(decision)
        return pending

    def waiting(self, conversation_id: str) -> list[PendingApproval]:
        return [p for p in self._pending.values() if p.conversation_id == conversation_id]
