"""The message tree: paths, siblings, and which fold applies to a path.

A conversation's messages form a tree: each message has a parent (None for a first
message), an edit or a regenerated answer is a sibling (another child of the same
parent), and the person reads one path at a time, from a first message to a leaf. A
message's depth is its display index on any path through it, so `apiStartIndex` keeps
meaning "the messages at depth >= this".

A fold summarizes a stretch of one path, so it APPLIES to a path exactly when its last
folded message is on that path: an edit after the fold's boundary keeps it, an edit of a
folded message starts a path it does not apply to. Folds are chained by `parent_version`
(the fold that was current when each was committed), and along a chain the boundaries
only move forward on one path, so the last folded messages of a chain are ancestors of
each other: walking a chain back from any fold finds the deepest fold that applies to a
given path, and every fold before it applies too.

Pure: the store and the chat layer hand these functions the few rows they need.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass

from foldline.core.messages import HistoryWindow, Message
from foldline.core.pins import Pin
from foldline.core.state import CompactionState
from foldline.core.view import build_api_messages


@dataclass(frozen=True)
class FoldLink:
    """One fold version as the pointer walk sees it."""

    version: int
    parent_version: int
    """The fold that was current when this one was committed (0 = none)."""
    last_message_id: str | None
    """The last message it folded; None when it folded nothing (it applies anywhere)."""


def fold_chain(pointer: int, folds: Mapping[int, FoldLink]) -> list[FoldLink]:
    """The folds from `pointer` back through each `parent_version`, newest first.

    A version missing from `folds` ends the chain (as 0 does); a loop, which only a
    damaged database could hold, is cut at the first repeat.
    """
    chain: list[FoldLink] = []
    seen: set[int] = set()
    version = pointer
    while version and version not in seen and version in folds:
        seen.add(version)
        link = folds[version]
        chain.append(link)
        version = link.parent_version
    return chain


def applies(link: FoldLink, on_path: Container[str]) -> bool:
    """Whether the fold applies to the path whose message ids `on_path` holds."""
    return link.last_message_id is None or link.last_message_id in on_path


def applicable_fold(pointer: int, folds: Mapping[int, FoldLink], on_path: Container[str]) -> int:
    """The deepest fold of `pointer`'s chain that applies to the path (0 = none)."""
    for link in fold_chain(pointer, folds):
        if applies(link, on_path):
            return link.version
    return 0


def path_to(leaf: str | None, parent_of: Mapping[str, str | None]) -> list[str]:
    """The ids from the first message to `leaf`, in display order ([] for None).

    Raises ValueError for an unknown parent or a loop: the tree is broken.
    """
    path: list[str] = []
    seen: set[str] = set()
    node = leaf
    while node is not None:
        if node in seen or node not in parent_of:
            raise ValueError(f"message {node!r} is not in a tree (a loop or a missing parent)")
        seen.add(node)
        path.append(node)
        node = parent_of[node]
    path.reverse()
    return path


def children_of(
    parent_of: Mapping[str, str | None], order: Sequence[str]
) -> dict[str | None, list[str]]:
    """Each message's children (None: the first messages), in the given creation order."""
    children: dict[str | None, list[str]] = {}
    for message_id in order:
        children.setdefault(parent_of[message_id], []).append(message_id)
    return children


def sibling_ids(
    message_id: str, parent_of: Mapping[str, str | None], order: Sequence[str]
) -> list[str]:
    """The message and its siblings (same parent), oldest first."""
    parent = parent_of[message_id]
    return [other for other in order if parent_of[other] == parent]


def latest_leaf(
    message_id: str, children: Mapping[str | None, Sequence[str]], rank: Callable[[str], int]
) -> str:
    """The leaf of highest `rank` in the subtree of `message_id`; ranked by when each leaf
    was last written or left, it is where the person last was on that branch."""
    best, stack = message_id, [message_id]
    found: str | None = None
    while stack:
        node = stack.pop()
        kids = children.get(node, ())
        if not kids and (found is None or rank(node) > rank(found)):
            found = node
        stack.extend(kids)
    return found if found is not None else best


def branch_view(
    path: Sequence[Message], state: CompactionState | None, pins: Sequence[Pin] = ()
) -> list[Message]:
    """What the model sees on a path: the fold's summary (with the folded pins) and the
    path's messages from the fold's `apiStartIndex` on, tool pairs repaired."""
    start = state.api_start_index if state else 0
    return build_api_messages(HistoryWindow(start, tuple(path[start:])), state, tuple(pins))
