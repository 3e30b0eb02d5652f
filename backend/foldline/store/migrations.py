"""Numbered schema migrations (sqlite-utils `Migrations`).

Each migration runs once, in order, inside the transaction that records it as applied.
Never edit a migration that has shipped: add the next number instead. Every column is
explained in `schema.COLUMN_DOCS`, and `tests/store/test_migrations.py` upgrades a
database from every earlier version and compares it with a fresh one.

A migration that rebuilds `messages` with `table.transform()` must finish with
`rebuild_search_index(db)`: the rebuild drops the full-text triggers.
"""

from __future__ import annotations

from sqlite_utils import Database, Migrations

from foldline.store.schema import CREATE_SEARCH_TABLE, rebuild_search_index

migrations = Migrations("foldline")


@migrations(name="m001_conversations_and_messages")
def m001_conversations_and_messages(db: Database) -> None:
    db["conversations"].create(
        {
            "id": str,
            "title": str,
            "model": str,
            "system_prompt": str,
            "settings": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"title", "system_prompt", "settings", "created_at", "updated_at"},
        defaults={"system_prompt": "", "settings": "{}"},
    )
    # The sidebar lists conversations newest first.
    db["conversations"].create_index(["updated_at"], index_name="conversations_by_updated_at")
    db["messages"].create(
        {
            "pk": int,
            "id": str,
            "conversation_id": str,
            "seq": int,
            "role": str,
            "parts": str,
            "status": str,
            "usage": str,
            "token_count": int,
            "error": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="pk",
        not_null={
            "id",
            "conversation_id",
            "seq",
            "role",
            "parts",
            "status",
            "created_at",
            "updated_at",
        },
        defaults={"status": "complete"},
        foreign_keys=[("conversation_id", "conversations", "id")],
    )
    db["messages"].create_index(["id"], index_name="messages_by_id", unique=True)
    # (conversation_id, seq) serves every read of a conversation: pages of the display
    # history, the model's window from apiStartIndex on, and max(seq) for the count,
    # each in time independent of the history's length. Unique: seq is the display index.
    db["messages"].create_index(
        ["conversation_id", "seq"], index_name="messages_by_conversation_seq", unique=True
    )
    # Startup recovery looks for rows left `streaming` by a crash; a partial index holds
    # only those few rows, so the check costs nothing however long the history is.
    db.execute("CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming'")


@migrations(name="m002_compactions")
def m002_compactions(db: Database) -> None:
    db["compactions"].create(
        {
            "conversation_id": str,
            "version": int,
            "parent_version": int,
            "compacted_at": str,
            "summary_message": str,
            "api_start_index": int,
            "from_index": int,
            "to_index": int,
            "message_count": int,
            "strategy": str,
            "trigger": str,
            "tokens_before": int,
            "tokens_after": int,
            "model": str,
            "degraded": int,
        },
        pk=("conversation_id", "version"),
        not_null={
            "conversation_id",
            "version",
            "parent_version",
            "compacted_at",
            "summary_message",
            "api_start_index",
            "from_index",
            "to_index",
            "message_count",
            "strategy",
            "trigger",
            "tokens_before",
            "tokens_after",
            "degraded",
        },
        defaults={"parent_version": 0, "degraded": 0},
        foreign_keys=[("conversation_id", "conversations", "id")],
    )
    db["conversations"].add_column("fold_version", int, not_null_default=0)


@migrations(name="m003_calibration")
def m003_calibration(db: Database) -> None:
    db["calibration"].create(
        {"provider": str, "model": str, "ratio": float, "samples": int, "updated_at": str},
        pk=("provider", "model"),
        not_null={"provider", "model", "ratio", "samples", "updated_at"},
    )


@migrations(name="m004_message_search")
def m004_message_search(db: Database) -> None:
    db.execute(CREATE_SEARCH_TABLE)
    # Creates the triggers and indexes the messages written before this migration.
    rebuild_search_index(db)


@migrations(name="m005_model_calls")
def m005_model_calls(db: Database) -> None:
    db["model_calls"].create(
        {
            "id": int,
            "conversation_id": str,
            "turn": int,
            "purpose": str,
            "message_id": str,
            "fold_version": int,
            "provider": str,
            "model": str,
            "input_tokens": int,
            "output_tokens": int,
            "cache_read_tokens": int,
            "cache_creation_tokens": int,
            "cost": float,
            "saved": float,
            "created_at": str,
        },
        pk="id",
        not_null={
            "conversation_id",
            "turn",
            "purpose",
            "provider",
            "model",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_creation_tokens",
            "created_at",
        },
        foreign_keys=[("conversation_id", "conversations", "id")],
    )
    # Every read is per conversation (the meter's totals, a fold's cost, the export).
    db["model_calls"].create_index(
        ["conversation_id", "id"], index_name="model_calls_by_conversation"
    )


@migrations(name="m006_pins_and_carried_details")
def m006_pins_and_carried_details(db: Database) -> None:
    # Pins belong to messages, not to folds, so that undoing a fold keeps them.
    db["messages"].add_column("pinned_at", str)
    # Every model call reads the pins; a partial index holds only the pinned rows, so the
    # read costs nothing however long the history is.
    db.execute(
        "CREATE INDEX messages_pinned ON messages (conversation_id, seq) "
        "WHERE pinned_at IS NOT NULL"
    )
    db["compactions"].add_column("carried_details", str, not_null_default="[]")
    db["compactions"].add_column("details_total", int, not_null_default=0)
    db["compactions"].add_column("details_kept", int, not_null_default=0)
    db["compactions"].add_column("details_appended", int, not_null_default=0)


@migrations(name="m007_continued_and_handoffs")
def m007_continued_and_handoffs(db: Database) -> None:
    db["messages"].add_column("continued", int, not_null_default=0)
    db["conversations"].add_column("origin_id", str)
    db["conversations"].add_column("origin_message_id", str)
    # "Continued in ..." lists the conversations handed off from one; a partial index
    # holds only the handed-off rows, so the lookup costs nothing for the others.
    db.execute(
        "CREATE INDEX conversations_by_origin ON conversations (origin_id) "
        "WHERE origin_id IS NOT NULL"
    )


@migrations(name="m008_message_tree")
def m008_message_tree(db: Database) -> None:
    # Messages form a tree: each has a parent, and `seq` becomes the depth. Every
    # conversation so far is one path, so each message's parent is the one before it.
    db["messages"].add_column("parent_id", str)
    db["messages"].add_column("on_path", int, not_null_default=1)
    db["messages"].add_column("leaf_fold_version", int)
    db["conversations"].add_column("active_leaf_id", str)
    db["compactions"].add_column("last_message_id", str)
    db.execute(
        "UPDATE messages SET parent_id = (SELECT p.id FROM messages AS p "
        "WHERE p.conversation_id = messages.conversation_id AND p.seq = messages.seq - 1)"
    )
    db.execute(
        "UPDATE conversations SET active_leaf_id = (SELECT m.id FROM messages AS m "
        "WHERE m.conversation_id = conversations.id ORDER BY m.seq DESC LIMIT 1)"
    )
    db.execute(
        "UPDATE compactions SET last_message_id = (SELECT m.id FROM messages AS m "
        "WHERE m.conversation_id = compactions.conversation_id "
        "AND m.seq = compactions.api_start_index - 1)"
    )
    # Siblings share a seq, so (conversation_id, seq) is unique only on the active path.
    # Every read of the display history or of the model's window names `on_path = 1`
    # literally, which lets SQLite use the partial index: each stays a range read whose
    # cost does not depend on how many branches there are.
    db.execute("DROP INDEX messages_by_conversation_seq")
    db.execute("CREATE INDEX messages_by_conversation_seq ON messages (conversation_id, seq)")
    db.execute(
        "CREATE UNIQUE INDEX messages_on_path ON messages (conversation_id, seq) WHERE on_path = 1"
    )
    # Switching branches walks down a subtree (children by parent).
    db.execute("CREATE INDEX messages_by_parent ON messages (parent_id)")


@migrations(name="m014_off_path_index")
def m014_off_path_index(db: Database) -> None:
    # The conversation list says whether a conversation has other versions; with this
    # partial index that is one lookup per conversation, not a walk over its messages.
    db.execute("CREATE INDEX messages_off_path ON messages (conversation_id) WHERE on_path = 0")


MIGRATION_NAMES: tuple[str, ...] = tuple(m.name for m in migrations.pending(Database(memory=True)))
"""The migration names in order: everything an empty database has pending (`pending` is
read-only, and its list is the registration order)."""
