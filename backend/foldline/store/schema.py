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
    "attachments": {
        "sha256": "SHA-256 of the bytes (64 hex digits): identical files are stored once; "
        "an attachment part of a message refers to its bytes by this.",
        "media_type": "The media type the bytes were checked to be when first attached.",
        "size": "Length of the bytes.",
        "data": "The file's bytes, as attached (never re-encoded).",
        "created_at": "When these bytes were first stored (ISO-8601 UTC).",
    },
    "conversations": {
        "id": "Stable public id (32 hex digits); used in URLs and exports, never reused.",
        "title": "Title shown in the sidebar; the person may rename it.",
        "model": "Model chosen for this conversation; NULL means the app's default model.",
        "provider": "The configured provider that serves `model` when several offer it "
        "(NULL = the one the configuration picks for the model).",
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
        "project_id": "The project the conversation belongs to (NULL = no project): its "
        "instructions, files and notes are sent with every call of the conversation.",
        "importing": "1 while an import is writing the conversation (in batches, each its "
        "own transaction): no read shows it, and one left by a crash is deleted at start; "
        "0 once complete.",
    },
    "messages": {
        "pk": "Row key (INTEGER PRIMARY KEY): the stable key of the full-text index; "
        "never shown outside the store.",
        "id": "Stable public id (32 hex digits) of the message.",
        "conversation_id": "The conversation the message belongs to.",
        "seq": "Depth in the message tree (0 = a first message): the display index on "
        "any path through it, so siblings share it; unique per conversation along any path. "
        "`apiStartIndex` counts in these.",
        "role": "user, assistant or tool.",
        "parts": "JSON array of the message's parts, each with a `kind` (text, reasoning, "
        "tool-call, tool-result, attachment), as the engine's Message values dump them.",
        "status": "complete, streaming (being written), interrupted (stopped, or the app "
        "died while streaming; partial text kept) or error.",
        "usage": "JSON object: token usage the provider reported for the call that produced "
        "this message (NULL if none).",
        "token_count": "Reserved, always NULL: a count depends on the model's tokenizer, so "
        "counts are stored per tokenizer in `message_counts`.",
        "error": "Why the message ended in error or was interrupted (NULL otherwise).",
        "created_at": "When the message was first written (ISO-8601 UTC).",
        "updated_at": "Last write to the message, e.g. the latest streamed flush (ISO-8601 UTC).",
        "pinned_at": "When the person pinned the message (ISO-8601 UTC; NULL = not pinned): a "
        "pinned message reaches the model verbatim in every request, whatever is folded.",
        "continued": "1 when Continue extended this answer in place after a stop or an error "
        "(the text after the interruption was written by a later call), else 0.",
        "parent_id": "The message this one follows (NULL for a first message); an edit or "
        "a regenerated answer is a sibling: a second child of the same parent.",
        "lane": "The lane (chain of first children) the message is in: the `pk` of the "
        "lane's first message; see `lanes`.",
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
        "carried_details": "JSON array of the person's details (sentences stating a "
        "decision, a constraint, a person or a fact) the summary or the person's words hold "
        "verbatim; the next fold checks them again. Folds made before person_words existed "
        "hold numbers, paths, names and instructions instead.",
        "details_total": "How many of the person's details this fold had to carry.",
        "details_kept": "How many of them the summary contained by itself.",
        "details_appended": "How many more the person's words kept after the summary hold "
        "(older folds: appended under 'From the person, verbatim').",
        "person_words": "JSON array of the person's own messages kept after the summary, "
        "oldest first: {index (display index), text (verbatim, or its key sentences when "
        "condensed), condensed}.",
        "last_message_id": "The last message the fold summarized (seq = api_start_index - 1; "
        "NULL when it folded none): the fold applies to the paths through it.",
        "summary_input_tokens": "What the summarizer's input cost for this fold, every call "
        "counted, in plain-input tokens (a view read from the prompt cache counts a tenth); "
        "0 for the digest and for older folds.",
        "saving_turns": "Turns the view takes to grow back to the threshold after this fold, "
        "at the pace the folded part grew: what its saving is counted over; 0 when unknown.",
    },
    "lanes": {
        "lane": "The lane's id: the `pk` of its first message. A message continues its "
        "parent's lane when it is the parent's first child and starts a lane otherwise.",
        "conversation_id": "The conversation the lane belongs to.",
        "parent_lane": "The lane of the first message's parent (NULL for a first message).",
        "fork_seq": "The seq of the first message's parent (NULL for a first message).",
        "head_seq": "The seq of the lane's first message.",
        "path_last": "The last seq of this lane on the active path (NULL when the path does "
        "not go through the lane): the active path is these segments, so moving it "
        "rewrites one row per lane, never a message.",
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
        "estimated": "1 when the provider reported no usage for the call (an answer stopped, "
        "or its stream broken, before the end where usage comes) and its tokens were counted "
        "by Foldline; else 0.",
    },
    "projects": {
        "id": "Stable public id (32 hex digits); kept by an import when unused here, so "
        "conversations exported from one project find it again.",
        "name": "Name shown as the sidebar group's heading.",
        "instructions": "Instructions sent before each of its conversations' own system "
        "prompt ('' = none).",
        "model": "Default model of its conversations that name none (NULL = the app's).",
        "settings": "JSON object of compaction overrides for its conversations (a "
        "conversation's own overrides win).",
        "created_at": "When the project was created (ISO-8601 UTC).",
        "updated_at": "Last change to the project, its files or notes (ISO-8601 UTC).",
        "importing": "1 while a project import is writing the project and its "
        "conversations (each in transactions of its own); no read shows it or them until "
        "the import sets it to 0, and one left at 1 by a crash is deleted at the next "
        "start.",
    },
    "project_files": {
        "id": "Stable public id (32 hex digits) of the file.",
        "project_id": "The project the file belongs to.",
        "name": "File name as uploaded; the model sees it as the file's heading.",
        "media_type": "Media type, checked against the bytes as a message's files are: "
        "application/pdf or a text type (text/plain, text/markdown, text/csv, "
        "application/json, ...); images are refused (the system prompt holds only text).",
        "size": "Size of `content` in bytes.",
        "sha256": "SHA-256 of `content` (hex): an identical upload is refused as a duplicate.",
        "pages": "A PDF's page count (NULL for a text file).",
        "text": "What the model reads in the project's block of the system prompt: a text "
        "file's content, or a PDF's extracted text with a `[page N]` line before each page "
        "(read once at upload).",
        "content": "The file's bytes as uploaded (served back for download and export).",
        "created_at": "When the file was added (ISO-8601 UTC); files are sent oldest first.",
    },
    "project_notes": {
        "id": "Stable public id (32 hex digits) of the note.",
        "project_id": "The project the note belongs to.",
        "title": "Short title of the pinned note.",
        "text": "The note, sent verbatim to the model with the project's files.",
        "created_at": "When the note was pinned (ISO-8601 UTC); notes are sent oldest first.",
        "updated_at": "Last edit of the note (ISO-8601 UTC).",
    },
    "message_counts": {
        "message_id": "The message counted (messages.id); the row is deleted by a trigger "
        "when the message's role or parts change or the message is deleted.",
        "counter": "Which tokenizer counted it: model, wire and options, as the chat "
        "layer names its counters.",
        "tokens": "The message's raw count as the model's view holds it (pruned outputs "
        "as their placeholder), before any calibration ratio.",
        "shape": "What pair repair reads of the message: its tool-call ids (assistant), "
        "its result ids (tool), '' (user) or '!' when repair changes it whatever its "
        "neighbours; the view's sum repairs and recounts only irregular groups.",
        "media": "The part of `tokens` that images and PDF page images make, billed by the "
        "provider's formula from their size: the calibration ratio scales only the rest.",
    },
    "messages_fts": {
        "text": "Searchable text of a message: text, tool names, inputs and outputs, "
        "attachment names and text (not the model's reasoning); written by triggers from "
        "`messages.parts`, rowid = messages.pk.",
    },
    "recall_fts": {
        "text": "What the model's recall tools search (stemmed): text, tool calls and whole "
        "tool outputs (`full_output` when truncated), attachment names and text (not the "
        "model's reasoning); written by triggers from `messages.parts`, rowid = messages.pk.",
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
