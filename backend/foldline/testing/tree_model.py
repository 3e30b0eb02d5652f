"""A reference model of the message tree's rules, for property tests.

`ConversationTree` keeps a conversation's messages as a tree in memory and follows the
rules the store implements in SQL: appends go after the active leaf; an edit or a
regeneration starts a branch after a message of the active path; leaving a leaf
remembers the fold pointer, arriving at one restores it (else the current pointer),
walked back along the fold chain to a fold that applies to the new path; a fold is
planned at a safe split of the active path and stacks on the current one; undo returns to
the parent fold. Tests drive it and the store with the same random steps and compare.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from foldline.core.messages import Message, ToolCallPart, ToolResultPart, assistant, tool_results
from foldline.core.messages import user as user_message
from foldline.core.planning import safe_split_points
from foldline.core.state import CompactionState, SummarizedRange
from foldline.core.tree import FoldLink, applicable_fold, children_of, latest_leaf, path_to


@dataclass
class ConversationTree:
    """A conversation tree with the store's fold-pointer rules, in memory."""

    messages: dict[str, Message] = field(default_factory=dict)
    parent_of: dict[str, str | None] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    leaf: str | None = None
    pointer: int = 0
    folds: dict[int, FoldLink] = field(default_factory=dict)
    states: dict[int, CompactionState] = field(default_factory=dict)
    remembered: dict[str, int] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    """When each message was last written or left (a tick), as the store's `updated_at`."""
    ids: itertools.count = field(default_factory=itertools.count)
    ticks: itertools.count = field(default_factory=itertools.count)

    def path(self, leaf: str | None = None) -> list[str]:
        return path_to(self.leaf if leaf is None else leaf, self.parent_of)

    def leaves(self) -> list[str]:
        children = children_of(self.parent_of, self.order)
        return [m for m in self.order if m not in children]

    def append(self, *messages: Message) -> list[str]:
        """Add messages after the active leaf; returns their ids."""
        added = []
        for message in messages:
            message_id = f"m{next(self.ids)}"
            self.messages[message_id] = message
            self.parent_of[message_id] = self.leaf
            self.order.append(message_id)
            self.used[message_id] = next(self.ticks)
            self.leaf = message_id
            added.append(message_id)
        return added

    @staticmethod
    def exchange(n: int, with_tool: bool) -> list[Message]:
        """A question, optionally a tool round trip, and an answer."""
        messages = [user_message(f"question {n}")]
        if with_tool:
            call = ToolCallPart(id=f"call{n}", name="read_file", input={"path": f"f{n}"})
            result = ToolResultPart(call_id=f"call{n}", name="read_file", output=f"text {n}")
            messages += [assistant(f"looking {n}", call), tool_results(result)]
        return [*messages, assistant(f"answer {n}")]

    def _leave(self) -> None:
        if self.leaf is not None:
            self.remembered[self.leaf] = self.pointer
            self.used[self.leaf] = next(self.ticks)

    def branch(self, parent: str | None, message: Message) -> str:
        """An edit (a user message) or a regeneration (an answer) after `parent`."""
        self._leave()
        self.leaf = parent
        self.pointer = applicable_fold(self.pointer, self.folds, set(self.path()))
        return self.append(message)[0]

    def pointer_of(self, leaf: str) -> int:
        """The fold a branch has: the current one on the active path; elsewhere the one
        remembered when it was left (else the current one), walked back to its path."""
        if leaf == self.leaf:
            return self.pointer
        start = self.remembered.get(leaf, self.pointer)
        return applicable_fold(start, self.folds, set(self.path(leaf)))

    def switch(self, message_id: str) -> None:
        target = latest_leaf(
            message_id, children_of(self.parent_of, self.order), self.used.__getitem__
        )
        if target == self.leaf:
            return
        pointer = self.pointer_of(target)
        self._leave()
        self.leaf, self.pointer = target, pointer

    def fold(self, choice: int) -> CompactionState | None:
        """A fold at one of the active path's safe splits after the current boundary."""
        path = self.path()
        start = self.states[self.pointer].api_start_index if self.pointer else 0
        points = [
            p for p in safe_split_points([self.messages[m] for m in path], start) if p > start
        ]
        if not points:
            return None
        split = points[choice % len(points)]
        version = max(self.folds, default=0) + 1
        self.folds[version] = FoldLink(version, self.pointer, path[split - 1])
        self.states[version] = CompactionState(
            version=version,
            compacted_at="2025-01-01T00:00:00Z",
            summary_message=f"summary {version} of {path[:split]}",
            api_start_index=split,
            summarized_range=SummarizedRange(
                from_index=start, to_index=split, message_count=split - start
            ),
            strategy="structured",
            trigger="auto",
            tokens_before=100,
            tokens_after=10,
        )
        self.pointer = version
        return self.states[version]

    def undo(self) -> int:
        """Undo the current fold; returns the version undone (0: none)."""
        undone = self.pointer
        if undone:
            self.pointer = self.folds[undone].parent_version
        return undone
