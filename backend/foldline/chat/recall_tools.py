"""The recall tools: `searchHistory`, `readHistory` and `searchConversations`.

They read the store (the recall index and the messages), never the model's view, so a
folded message is found and returned word for word however many folds ago it left the
view. The store is read off the event loop (`asyncio.to_thread`). Every bad input (a
query too long or empty, a number out of range, a conversation out of reach) comes back
as a tool error the model reads; a conversation out of the setting's reach and one that
does not exist get the same answer, so nothing leaks across the scope.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from foldline.chat.context import ConversationContext
from foldline.chat.tool_registry import Tool, ToolEnv, ToolOutcome
from foldline.core.messages import ToolCallPart, ToolSpec
from foldline.core.recall import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MIN_RESULT_TOKENS,
    READ_HISTORY,
    SEARCH_CONVERSATIONS,
    SEARCH_HISTORY,
    Hit,
    ReadMessage,
    RecallError,
    RecallScope,
    check_range,
    expanded_terms,
    fts_match,
    message_text,
    no_room_message,
    others_scope,
    query_terms,
    read_result,
    result_cap,
    search_result,
)
from foldline.store import NotFound, Store

MAX_READ_MESSAGES = 200
"""The most messages one `readHistory` call loads (the cap cuts long before)."""

SEARCH_HISTORY_SPEC = ToolSpec(
    name=SEARCH_HISTORY,
    description=(
        "Search this whole conversation, folded parts included, in plain words. "
        "Hits: #n, who, when, the matching sentence."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)

READ_HISTORY_SPEC = ToolSpec(
    name=READ_HISTORY,
    description=(
        "Read messages #fromIndex..#toIndex verbatim; conversationId for one "
        "searchConversations found."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "fromIndex": {"type": "integer", "minimum": 0},
            "toIndex": {"type": "integer", "minimum": 0},
            "conversationId": {"type": "string"},
        },
        "required": ["fromIndex", "toIndex"],
        "additionalProperties": False,
    },
)

SEARCH_CONVERSATIONS_SPEC = ToolSpec(
    name=SEARCH_CONVERSATIONS,
    description="Search the person's other conversations in plain words.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    },
)
"""The specs are short on purpose: they join every request from the first fold on, and
on a small window each token of them is one the conversation cannot use. The results
explain themselves (what a hit line holds, where to continue), and the summary says
which message numbers were folded."""


def context_recall_scope(ctx: ConversationContext) -> RecallScope | None:
    """What this turn's recall calls may use, from the loaded view: None without a fold
    (the tools are not offered then)."""
    if ctx.state is None:
        return None
    settings = ctx.settings
    return RecallScope(
        view_start=ctx.state.api_start_index,
        cap_tokens=result_cap(
            settings.recall_token_cap,
            ctx.budget.input_budget,
            ctx.tokens,
            settings.tool_result_token_cap,
        ),
        conversations=settings.recall_conversations,
        project_id=ctx.conversation.project_id,
        count_text=ctx.counter.count_text,
    )


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(text, is_error=True)


def _query(arguments: dict[str, Any]) -> str:
    query = arguments.get("query")
    if not isinstance(query, str):
        raise RecallError("query must be a string: a question or a few words.")
    return query


def _limit(arguments: dict[str, Any]) -> int:
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise RecallError(f"limit must be an integer from 1 to {MAX_LIMIT}.")
    return limit


class RecallTools:
    """The three recall tools over one store."""

    def __init__(self, store: Store, synonyms: bool = True) -> None:
        self.store = store
        self.synonyms = synonyms
        """Whether a query also looks for the words' synonyms (the benchmark measures
        without them too)."""

    def tools(self) -> tuple[Tool, ...]:
        return (
            _Tool(SEARCH_HISTORY_SPEC, self.search_history),
            _Tool(READ_HISTORY_SPEC, self.read_history),
            _Tool(SEARCH_CONVERSATIONS_SPEC, self.search_conversations),
        )

    async def search_history(
        self, arguments: dict[str, Any], conversation_id: str, scope: RecallScope
    ) -> ToolOutcome:
        terms = query_terms(_query(arguments))
        limit = _limit(arguments)
        words = expanded_terms(terms, self.synonyms)
        rows, total = await asyncio.to_thread(
            self.store.recall_search, conversation_id, fts_match(words), limit
        )
        hits = [
            Hit(r.seq, r.role, r.created_at, message_text(r.message), r.seq >= scope.view_start)
            for r in rows
        ]
        return ToolOutcome(search_result(hits, total, words, scope.cap_tokens, scope.count_text))

    async def search_conversations(
        self, arguments: dict[str, Any], conversation_id: str, scope: RecallScope
    ) -> ToolOutcome:
        refused = others_scope(scope)
        if refused:
            return _error(refused)
        terms = query_terms(_query(arguments))
        words = expanded_terms(terms, self.synonyms)
        rows, total = await asyncio.to_thread(
            self.store.recall_search_others,
            conversation_id,
            scope.project_id,
            fts_match(words),
            DEFAULT_LIMIT,
        )
        hits = [
            Hit(
                r.seq,
                r.role,
                r.created_at,
                message_text(r.message),
                conversation_id=r.conversation_id,
                title=r.title,
            )
            for r in rows
        ]
        return ToolOutcome(
            search_result(
                hits, total, words, scope.cap_tokens, scope.count_text, other_conversations=True
            )
        )

    async def read_history(
        self, arguments: dict[str, Any], conversation_id: str, scope: RecallScope
    ) -> ToolOutcome:
        from_index, to_index = arguments.get("fromIndex"), arguments.get("toIndex")
        check_range(from_index, to_index, 2**62)  # types and order, before any read
        assert isinstance(from_index, int) and isinstance(to_index, int)
        target = arguments.get("conversationId")
        own = target is None or target == conversation_id
        if not own:
            if not isinstance(target, str):
                raise RecallError(
                    "conversationId must be a string (an id searchConversations gave)."
                )
            refused = others_scope(scope)
            if refused:
                return _error(refused)
            if not await asyncio.to_thread(self._within_reach, target, scope.project_id):
                return _error(
                    f"No conversation {target!r} within reach: use an id searchConversations "
                    "returned."
                )
        read_id = conversation_id if own else str(target)
        try:
            length, records = await asyncio.to_thread(
                self.store.recall_read,
                read_id,
                from_index,
                min(to_index, from_index + MAX_READ_MESSAGES - 1),
            )
        except NotFound:
            return _error(f"No conversation {read_id!r} within reach.")
        first, last = check_range(from_index, to_index, length)
        reads = [ReadMessage(r.seq, r.message.role, r.created_at, r.message) for r in records]
        return ToolOutcome(
            read_result(
                reads,
                min(last, first + MAX_READ_MESSAGES - 1),
                scope.cap_tokens,
                scope.count_text,
                start_in_view=scope.view_start if own else None,
            )
        )

    def _within_reach(self, target: str, project_id: str | None) -> bool:
        """The conversation exists, is not being imported, and is in the project when
        the scope is one."""
        try:
            record = self.store.get_conversation(target)
        except NotFound:
            return False
        return project_id is None or record.project_id == project_id


@dataclass(frozen=True)
class _Tool:
    spec: ToolSpec
    handler: Any

    async def run(self, call: ToolCallPart, env: ToolEnv) -> ToolOutcome:
        scope = env.recall
        if scope is None:
            return _error(f"{self.spec.name} is not available in this conversation.")
        if scope.cap_tokens < MIN_RESULT_TOKENS:
            return _error(no_room_message())
        try:
            return await self.handler(call.input, env.conversation_id, scope)
        except RecallError as error:
            return _error(str(error))


def recall_specs() -> Sequence[ToolSpec]:
    return (SEARCH_HISTORY_SPEC, READ_HISTORY_SPEC, SEARCH_CONVERSATIONS_SPEC)
