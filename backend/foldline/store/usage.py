"""What each model call used and cost: the rows of `model_calls` and their sums.

Every call is stored when it finishes, chat answers and summarizer calls alike, with
the prompt-cache split the provider reported and its cost at the prices of the moment
(NULL for a model without a known price). The sums serve the context meter (this
conversation so far, the last turn, what caching saved) and the fold lines (what each
fold cost).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

CallPurpose = Literal["chat", "summary"]


@dataclass(frozen=True)
class ModelCall:
    """One finished call to a model (one row of `model_calls`)."""

    turn: int
    purpose: CallPurpose
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost: float | None = None
    saved: float | None = None
    message_id: str | None = None
    fold_version: int | None = None
    created_at: str = ""
    estimated: bool = False
    """The provider reported no usage (the answer was stopped, or its stream broke,
    before the end where providers report it): the tokens were counted by Foldline."""


@dataclass(frozen=True)
class UsageTotals:
    """Tokens and dollars summed over some calls; dollars are None when no call had a
    price, and cover only the priced calls when some had one."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost: float | None = None
    saved: float | None = None
    estimated_calls: int = 0
    """How many of the calls were counted by Foldline, not reported (`ModelCall.estimated`)."""


CALL_COLUMNS = (
    "turn, purpose, provider, model, input_tokens, output_tokens, cache_read_tokens, "
    "cache_creation_tokens, cost, saved, message_id, fold_version, created_at, estimated"
)
_SUMS = (
    "count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), "
    "coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_creation_tokens), 0), "
    "sum(cost), sum(saved), coalesce(sum(estimated), 0)"
)


def insert_calls(
    conn: sqlite3.Connection, conversation_id: str, calls: Sequence[ModelCall]
) -> None:
    conn.executemany(
        f"INSERT INTO model_calls (conversation_id, {CALL_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                conversation_id,
                c.turn,
                c.purpose,
                c.provider,
                c.model,
                c.input_tokens,
                c.output_tokens,
                c.cache_read_tokens,
                c.cache_creation_tokens,
                c.cost,
                c.saved,
                c.message_id,
                c.fold_version,
                c.created_at,
                int(c.estimated),
            )
            for c in calls
        ],
    )


def _totals(row: tuple) -> UsageTotals:
    return UsageTotals(*row)


def conversation_totals(conn: sqlite3.Connection, conversation_id: str) -> UsageTotals:
    row = conn.execute(
        f"SELECT {_SUMS} FROM model_calls WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()
    return _totals(row)


def last_turn_totals(conn: sqlite3.Connection, conversation_id: str) -> UsageTotals:
    """The calls of the latest turn that made any (background folds included)."""
    row = conn.execute(
        f"SELECT {_SUMS} FROM model_calls WHERE conversation_id = ? AND turn = "
        "(SELECT max(turn) FROM model_calls WHERE conversation_id = ?)",
        (conversation_id, conversation_id),
    ).fetchone()
    return _totals(row)


def fold_totals(conn: sqlite3.Connection, conversation_id: str) -> dict[int, UsageTotals]:
    rows = conn.execute(
        f"SELECT fold_version, {_SUMS} FROM model_calls "
        "WHERE conversation_id = ? AND fold_version IS NOT NULL GROUP BY fold_version",
        (conversation_id,),
    ).fetchall()
    return {row[0]: _totals(row[1:]) for row in rows}


def list_calls(conn: sqlite3.Connection, conversation_id: str) -> list[ModelCall]:
    rows = conn.execute(
        f"SELECT {CALL_COLUMNS} FROM model_calls WHERE conversation_id = ? ORDER BY id",
        (conversation_id,),
    ).fetchall()
    return [ModelCall(*row[:-1], estimated=bool(row[-1])) for row in rows]


def last_chat_call(conn: sqlite3.Connection, conversation_id: str) -> ModelCall | None:
    row = conn.execute(
        f"SELECT {CALL_COLUMNS} FROM model_calls WHERE conversation_id = ? AND purpose = 'chat' "
        "ORDER BY id DESC LIMIT 1",
        (conversation_id,),
    ).fetchone()
    return None if row is None else ModelCall(*row[:-1], estimated=bool(row[-1]))


def last_call_at(conn: sqlite3.Connection, conversation_id: str) -> str | None:
    """When this conversation's last chat call finished: how warm its prompt cache is."""
    row = conn.execute(
        "SELECT max(created_at) FROM model_calls WHERE conversation_id = ? AND purpose = 'chat'",
        (conversation_id,),
    ).fetchone()
    return row[0]
