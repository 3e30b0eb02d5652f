"""Token accounting of the wire payload a provider receives.

(Contract stub: the implementations are being written; the protocol below is fixed.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from foldline.core.messages import Message, ToolSpec


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of engine values as the provider will receive them.

    `count_request(system, messages, tools)` must equal
    `count_request(system, [], tools) + sum(count_message(m) for m in messages)`, so a
    caller may cache per-message counts and add them up.
    """

    exact: bool
    """True when counts are exact (OpenAI tokenizers); False for estimates."""

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_tools(self, tools: Sequence[ToolSpec]) -> int: ...

    def count_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int: ...
