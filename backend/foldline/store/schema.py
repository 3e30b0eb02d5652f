"""The database schema explained, and the full-text index kept in step with it.

`COLUMN_DOCS` is the comment on every column of every table the migrations create; a test
compares it with the live schema, so a column added without a comment (or a comment left
behind for a dropped column) fails the build. The comments live here rather than as SQL
comments because `table.transform()` rewrites `CREATE TABLE` statements and would lose them.

Full-text search uses a *contentless* FTS5 table keyed on `messages.pk`, an
`INTEGER PRIMARY KEY`: unlike a hidden rowid it survives `VACUUM` and table rebuilds. The
searchable text is derived from the parts JSON inside SQL by the triggers, so message text
is not stored twice. (An external-content table over a view would be tidier, but FTS5
cannot read a view that uses `json_each`, so its `rebuild` command fails; a contentless
table is rebuilt with `delete-all` plus a re-insert instead.)
"""

from __future__ import annotations

from sqlite_utils import Database

COLUMN_DOCS: dict[str, dict[str, str]] = {
    "conversations": {
        "id": "Stable public id (32 hex digits); used in URLs and exports, never reused.",
        "title": "Title shown in the sidebar; the person may rename it.",
        "model": "Model chosen for this conversation; NULL means the app's default model.",
        "system_prompt": "System prompt sent with every call of this conversation ('' = none).",
        "settings": "JSON object of per-conversation overrides (for example compaction knobs).",
        "created_at": "When the conversation was created (ISO-8601 UTC).",
        "updated_at": "Last change (rename, new message, fold, undo; ISO-8601 UTC): "
        "orders the sidebar, newest first.",
        "fold_version": "Version of the current fold in `compactions` (0 = no fold): the "
        "single pointer that commit and undo move. It always applies to the active path.",
        "active_leaf_id": "The last message of the active path (NULL = no message): the "
        "display history is the path from the first message to it.",
        "origin_id": "The conversation this one was handed off from ('New conversation from "
        "here'; NULL = none, or that conversation was deleted).",
        "origin_message_id": "The last message of the origin conversation the hand-off "
        "covered (NULL = none).",
    },
    "messages": {
        "pk": "Row key (INTEGER PRIMARY KEY): the stable key of the full-text index; "
        "never shown outside the store.",
        "id": "Stable public id (32 hex digits) of the message.",
        "conversation_id": "The conversation the message belongs to.",
        "seq": "Depth in the message tree (0 = a first message): the display index on "
        "any path through it, so siblings share it; unique per conversation among the "
        "rows with on_path = 1. `apiStartIndex` counts in these.",
        "role": "user, assistant or tool.",
        "parts": "JSON array of the message's parts, each with a `kind` (text, reasoning, "
        "tool-call, tool-result, attachment), as the engine's Message values dump them.",
        "status": "complete, streaming (being written), interrupted (stopped, or the app "
        "died while streaming; partial text kept) or error.",
        "usage": "JSON object: token usage the provider reported for the call that produced "
        "this message (NULL if none).",
        "token_count": "Reserved, always NULL: a count depends on the model's tokenizer, so "
        "the app caches counts in memory per model, keyed by (id, updated_at).",
        "error": "Why the message ended in error or was interrupted (NULL otherwise).",
        "created_at": "When the message was first written (ISO-8601 UTC).",
        "updated_at": "Last write to the message, e.g. the latest streamed flush (ISO-8601 UTC).",
        "pinned_at": "When the person pinned the message (ISO-8601 UTC; NULL = not pinned): a "
        "pinned message reaches the model verbatim in every request, whatever is folded.",
        "continued": "1 when Continue extended this answer in place after a stop or an error "
        "(the text after the interruption was written by a later call), else 0.",
        "parent_id": "The message this one follows (NULL for a first message); an edit or "
        "a regenerated answer is a sibling: a second child of the same parent.",
        "on_path": "1 when the message is on the active path (the path to "
        "conversations.active_leaf_id), else 0: kept in step by every branch switch so "
        "the history's reads stay range reads.",
        "leaf_fold_version": "On a leaf the person left: the fold version that was current "
        "on its path then, restored when they come back (NULL = never left).",
    },
    "compactions": {
        "conversation_id": "The conversation this fold belongs to.",
        "version": "Fold version, 1, 2, 3... per conversation; rows are never updated or "
        "deleted (append-only history of folds).",
        "parent_version": "The version that was current when this fold was committed "
        "(0 = none): undo makes it current again.",
        "compacted_at": "When the engine produced the fold (ISO-8601 UTC, given by the caller).",
        "summary_message": "The summary that stands for every message before api_start_index.",
        "api_start_index": "The model sees the summary plus messages with seq >= this.",
        "from_index": "First display index summarized by this fold (inclusive).",
        "to_index": "Display index where the summarized range ends (exclusive).",
        "message_count": "How many display messages this fold summarized.",
        "strategy": "structured, narrative, free-form (a model summary that ignored the "
        "requested format, kept as written) or emergency (the extractive digest).",
        "trigger": "What asked for the fold: auto, manual, tool, overflow, or handoff (the "
        "summary a conversation started from when it was handed off from another).",
        "tokens_before": "Tokens of the model's view just before the fold.",
        "tokens_after": "Tokens of the model's view just after the fold.",
        "model": "Model that wrote the summary (NULL for the emergency digest).",
        "degraded": "1 when the summary is the emergency digest, to be re-summarized later.",
        "carried_details": "JSON array of the person's details (numbers, paths, URLs, names, "
        "quotes, instructions) the summary holds verbatim; the next fold checks them again.",
        "details_total": "How many of the person's details this fold had to carry.",
        "details_kept": "How many of them the summary contained by itself.",
        "details_appended": "How many were appended verbatim under 'From the person, verbatim'.",
        "last_message_id": "The last message the fold summarized (seq = api_start_index - 1; "
        "NULL when it folded none): the fold applies to the paths through it.",
    },
    "calibration": {
        "provider": "Provider name as configured (anthropic, openai, a local server's name).",
        "model": "Model id at that provider.",
        "ratio": "Learned actual/estimated input-token ratio (EMA) for estimated counts.",
        "samples": "How many reported usages went into the ratio.",
        "updated_at": "When the ratio last changed (ISO-8601 UTC).",
    },
    "model_calls": {
        "id": "Row key, in the order the calls finished.",
        "conversation_id": "The conversation the call was made for.",
        "turn": "Display index of the user message whose turn made the call (for a fold "
        "prepared in the background: the turn after which it was prepared).",
        "purpose": "chat (an answer) or summary (a summarizer call: for a fold, or for a title "
        "made after the first exchange).",
        "message_id": "The assistant message a chat call wrote (NULL for summaries).",
        "fold_version": "The fold a summarizer call belongs to (NULL for chat calls, and for "
        "summaries that never became a fold: failed, or prepared and then dropped).",
        "provider": "Provider name as configured.",
        "model": "Model id at that provider.",
        "input_tokens": "Input tokens billed at the full price (neither read from nor written "
        "to the prompt cache).",
        "output_tokens": "Output tokens.",
        "cache_read_tokens": "Input tokens read from the prompt cache.",
        "cache_creation_tokens": "Input tokens written to the prompt cache.",
        "cost": "US dollars at the model's prices when the call was made (NULL when the "
        "model has no known price: tokens only).",
        "saved": "Dollars the prompt cache saved on this call, net of the write premium "
        "(NULL without prices).",
        "created_at": "When the call finished (ISO-8601 UTC).",
    },
    "messages_fts": {
        "text": "Searchable text of a message: text, tool names, inputs and outputs, "
        "attachment names and text (not the model's reasoning); written by triggers from "
        "`messages.parts`, rowid = messages.pk.",
    },
}

# The searchable text of one parts array, as an SQL expression over `{parts}`. The model's
# reasoning is left out: a search finds what was said, not what the model mulled over on
# the way (and thinking is long enough to drown real hits). It must be deterministic:
# the delete trigger recomputes it from the old row to remove exactly the
# tokens the insert added (a contentless FTS5 table cannot look them up itself).
_SEARCH_TEXT = """(
  SELECT group_concat(
    CASE json_extract(part.value, '$.kind')
      WHEN 'tool-call' THEN json_extract(part.value, '$.name') || ' '
        || coalesce(json_extract(part.value, '$.input'), '')
      WHEN 'tool-result' THEN json_extract(part.value, '$.name') || ' '
        || coalesce(json_extract(part.value, '$.output'), '')
      WHEN 'attachment' THEN json_extract(part.value, '$.name') || ' '
        || coalesce(json_extract(part.value, '$.text'), '')
      WHEN 'reasoning' THEN NULL
      ELSE json_extract(part.value, '$.text')
    END, char(10))
  FROM json_each({parts}) AS part
)"""


def search_text_sql(parts: str) -> str:
    """The SQL expression computing the searchable text from a parts JSON expression."""
    return _SEARCH_TEXT.format(parts=parts)


SEARCH_TRIGGERS: dict[str, str] = {
    "messages_fts_insert": f"""
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, text) VALUES (new.pk, {search_text_sql("new.parts")});
END""",
    "messages_fts_delete": f"""
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, text)
  VALUES ('delete', old.pk, {search_text_sql("old.parts")});
END""",
    "messages_fts_update": f"""
CREATE TRIGGER messages_fts_update AFTER UPDATE OF parts ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, text)
  VALUES ('delete', old.pk, {search_text_sql("old.parts")});
  INSERT INTO messages_fts (rowid, text) VALUES (new.pk, {search_text_sql("new.parts")});
END""",
}

CREATE_SEARCH_TABLE = (
    "CREATE VIRTUAL TABLE messages_fts USING fts5("
    "text, content='', tokenize='unicode61 remove_diacritics 2')"
)


def missing_search_triggers(db: Database) -> list[str]:
    present = {
        row[0]
        for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'"
        )
    }
    return [name for name in SEARCH_TRIGGERS if name not in present]


def rebuild_search_index(db: Database) -> None:
    """Recreate any missing trigger and re-index every message.

    `table.transform()` rebuilds `messages` by creating a copy and dropping the original,
    which silently drops its triggers: new messages would stop being indexed. Migrations
    that transform `messages` must call this afterwards, and the store calls it at startup
    whenever a trigger is missing (a test transforms the table to prove both). Call inside
    a transaction.
    """
    for name in missing_search_triggers(db):
        db.execute(SEARCH_TRIGGERS[name])
    db.execute("INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')")
    db.execute(
        f"INSERT INTO messages_fts (rowid, text) "
        f"SELECT pk, {search_text_sql('parts')} FROM messages"
    )
