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

from foldline.store.branches import rebuild_lanes
from foldline.store.counts import COUNT_TRIGGERS, CREATE_COUNTS_TABLE
from foldline.store.recall import CREATE_RECALL_TABLE, rebuild_recall_index
from foldline.store.schema import CREATE_SEARCH_TABLE, SEARCH_TRIGGERS, rebuild_search_index

migrations = Migrations("foldline")
# Tables are named with `db.table(name)`, not `db[name]`: the latter may also be a view,
# which has no `create` or `add_column`, so a type checker cannot accept it.


@migrations(name="m001_conversations_and_messages")
def m001_conversations_and_messages(db: Database) -> None:
    db.table("conversations").create(
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
    db.table("conversations").create_index(["updated_at"], index_name="conversations_by_updated_at")
    db.table("messages").create(
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
    db.table("messages").create_index(["id"], index_name="messages_by_id", unique=True)
    # (conversation_id, seq) serves every read of a conversation: pages of the display
    # history, the model's window from apiStartIndex on, and max(seq) for the count,
    # each in time independent of the history's length. Unique: seq is the display index.
    db.table("messages").create_index(
        ["conversation_id", "seq"], index_name="messages_by_conversation_seq", unique=True
    )
    # Startup recovery looks for rows left `streaming` by a crash; a partial index holds
    # only those few rows, so the check costs nothing however long the history is.
    db.execute("CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming'")


@migrations(name="m002_compactions")
def m002_compactions(db: Database) -> None:
    db.table("compactions").create(
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
    db.table("conversations").add_column("fold_version", int, not_null_default=0)


@migrations(name="m003_calibration")
def m003_calibration(db: Database) -> None:
    db.table("calibration").create(
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
    db.table("model_calls").create(
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
    db.table("model_calls").create_index(
        ["conversation_id", "id"], index_name="model_calls_by_conversation"
    )


@migrations(name="m006_pins_and_carried_details")
def m006_pins_and_carried_details(db: Database) -> None:
    # Pins belong to messages, not to folds, so that undoing a fold keeps them.
    db.table("messages").add_column("pinned_at", str)
    # Every model call reads the pins; a partial index holds only the pinned rows, so the
    # read costs nothing however long the history is.
    db.execute(
        "CREATE INDEX messages_pinned ON messages (conversation_id, seq) "
        "WHERE pinned_at IS NOT NULL"
    )
    db.table("compactions").add_column("carried_details", str, not_null_default="[]")
    db.table("compactions").add_column("details_total", int, not_null_default=0)
    db.table("compactions").add_column("details_kept", int, not_null_default=0)
    db.table("compactions").add_column("details_appended", int, not_null_default=0)


@migrations(name="m007_continued_and_handoffs")
def m007_continued_and_handoffs(db: Database) -> None:
    db.table("messages").add_column("continued", int, not_null_default=0)
    db.table("conversations").add_column("origin_id", str)
    db.table("conversations").add_column("origin_message_id", str)
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
    db.table("messages").add_column("parent_id", str)
    db.table("messages").add_column("on_path", int, not_null_default=1)
    db.table("messages").add_column("leaf_fold_version", int)
    db.table("conversations").add_column("active_leaf_id", str)
    db.table("compactions").add_column("last_message_id", str)
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


@migrations(name="m009_attachments")
def m009_attachments(db: Database) -> None:
    # A file's bytes, once for every message (of any conversation) that holds it; message
    # parts keep its name and metadata and refer to it by sha256.
    db.table("attachments").create(
        {"sha256": str, "media_type": str, "size": int, "data": bytes, "created_at": str},
        pk="sha256",
        not_null={"media_type", "size", "data", "created_at"},
    )


@migrations(name="m010_projects")
def m010_projects(db: Database) -> None:
    # (m009 is the attachments table, written by another branch; names keep the order.)
    db.table("projects").create(
        {
            "id": str,
            "name": str,
            "instructions": str,
            "model": str,
            "settings": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"name", "instructions", "settings", "created_at", "updated_at"},
        defaults={"instructions": "", "settings": "{}"},
    )
    db.table("project_files").create(
        {
            "id": str,
            "project_id": str,
            "name": str,
            "media_type": str,
            "size": int,
            "sha256": str,
            "pages": int,
            "text": str,
            "content": bytes,
            "created_at": str,
        },
        pk="id",
        not_null={
            "project_id",
            "name",
            "media_type",
            "size",
            "sha256",
            "text",
            "content",
            "created_at",
        },
        foreign_keys=[("project_id", "projects", "id")],
    )
    db.table("project_files").create_index(
        ["project_id", "created_at"], index_name="files_by_project"
    )
    db.table("project_notes").create(
        {
            "id": str,
            "project_id": str,
            "title": str,
            "text": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"project_id", "title", "text", "created_at", "updated_at"},
        foreign_keys=[("project_id", "projects", "id")],
    )
    db.table("project_notes").create_index(
        ["project_id", "created_at"], index_name="notes_by_project"
    )
    # A column added with REFERENCES and a NULL default needs no table rebuild.
    db.execute("ALTER TABLE conversations ADD COLUMN project_id TEXT REFERENCES projects(id)")
    # The sidebar's groups and the list filter read conversations by project; a partial
    # index holds only the conversations that are in one.
    db.execute(
        "CREATE INDEX conversations_by_project ON conversations (project_id, updated_at) "
        "WHERE project_id IS NOT NULL"
    )


@migrations(name="m011_counts_and_lanes")
def m011_counts_and_lanes(db: Database) -> None:
    # Token counts of messages, stored once per tokenizer so that counting the model's
    # view is a sum over its rows instead of encoding every message again.
    db.execute(CREATE_COUNTS_TABLE)
    for sql in COUNT_TRIGGERS.values():
        db.execute(sql)
    # The tree as lanes (chains of first children): the active path is a few lane rows
    # instead of a flag on every message, so moving it never rewrites the history.
    db.table("messages").add_column("lane", int)
    db.execute(
        "CREATE TABLE lanes ("
        " lane INTEGER PRIMARY KEY,"
        " conversation_id TEXT NOT NULL REFERENCES conversations(id),"
        " parent_lane INTEGER,"
        " fork_seq INTEGER,"
        " head_seq INTEGER NOT NULL,"
        " path_last INTEGER)"
    )
    # Every read of the active path starts from its lanes (a partial index: only those),
    # then reads each lane's messages by (lane, seq); a switch finds the lanes forking
    # from a segment by (parent_lane, fork_seq).
    db.execute("CREATE INDEX lanes_on_path ON lanes (conversation_id) WHERE path_last IS NOT NULL")
    db.execute("CREATE INDEX lanes_by_parent ON lanes (parent_lane, fork_seq)")
    db.execute("CREATE INDEX messages_by_lane ON messages (lane, seq)")
    rebuild_lanes(db.conn)
    # An import writes in batches under this mark and clears it when complete; reads
    # leave marked conversations out, and the store deletes them when it opens.
    db.table("conversations").add_column("importing", int, not_null_default=0)
    db.execute("CREATE INDEX conversations_importing ON conversations (id) WHERE importing = 1")
    db.execute("DROP INDEX messages_on_path")
    db.execute("ALTER TABLE messages DROP COLUMN on_path")


@migrations(name="m013_person_words")
def m013_person_words(db: Database) -> None:
    # Folds made before it kept the person's details inside their summary text; they
    # keep no separate words, and the next fold starts the words from its own messages.
    db.table("compactions").add_column("person_words", str, not_null_default="[]")


@migrations(name="m014_conversations_with_versions")
def m014_conversations_with_versions(db: Database) -> None:
    # The conversation list says whether a conversation has other versions: it has them
    # exactly when it has more than one lane (every edit or regeneration starts a lane).
    # This index makes that one short lookup per conversation.
    db.execute("CREATE INDEX lanes_by_conversation ON lanes (conversation_id)")


@migrations(name="m015_search_skips_reasoning")
def m015_search_skips_reasoning(db: Database) -> None:
    # The search text no longer holds reasoning. The delete trigger must remove exactly
    # the tokens the insert added, so the triggers are recreated and every message is
    # indexed again under the new text.
    for name in SEARCH_TRIGGERS:
        db.execute(f"DROP TRIGGER IF EXISTS {name}")
    rebuild_search_index(db)


@migrations(name="m016_estimated_calls")
def m016_estimated_calls(db: Database) -> None:
    # Calls recorded before it all had the usage their provider reported.
    db.table("model_calls").add_column("estimated", int, not_null_default=0)


@migrations(name="m017_recall_index")
def m017_recall_index(db: Database) -> None:
    # The model's recall tools search a second full-text index: stemmed (porter), and
    # holding tool outputs whole (`full_output`), where the find index keeps what the
    # person reads. `recall_fts.text` is each message's recall text (rowid = messages.pk);
    # the triggers keep it in step, and every stored message is indexed now.
    db.execute(CREATE_RECALL_TABLE)
    rebuild_recall_index(db)


@migrations(name="m018_conversation_provider")
def m018_conversation_provider(db: Database) -> None:
    # Two providers may offer the same model id (an OpenAI-compatible proxy listing
    # Claude models beside Anthropic itself); the conversation names the one that serves
    # its model. NULL: the provider the configuration picks for the model, as before.
    db.table("conversations").add_column("provider", str)


@migrations(name="m020_bricks")
def m020_bricks(db: Database) -> None:
    # A project import writes its project and conversations in many transactions; the
    # project stays hidden (and its conversations with it) until the last is written,
    # and one cut short by a crash is deleted when the store opens next.
    db.table("projects").add_column("importing", int, not_null_default=0)


@migrations(name="m021_fold_cost")
def m021_fold_cost(db: Database) -> None:
    # What a fold cost and what it saves: the summarizer's input tokens (billed as plain
    # input) and the turns its smaller view lasts. Folds stored before it have 0 for
    # both, which the fold line reads as "not recorded".
    db.table("compactions").add_column("summary_input_tokens", int, not_null_default=0)
    db.table("compactions").add_column("saving_turns", int, not_null_default=0)


MIGRATION_NAMES: tuple[str, ...] = tuple(m.name for m in migrations.pending(Database(memory=True)))
"""The migration names in order: everything an empty database has pending (`pending` is
read-only, and its list is the registration order)."""
