"""The main states drawn in both themes, saved as screenshots (test-artifacts/screenshots/).

Besides the pictures, each state is checked: the themes really differ, the fold line is
on screen between the dimmed history and the live tail, and its summary is open.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from foldline.testing import Reply, call, tool_step

TURNS = [
    (
        "We are building a notes app. Sketch the storage layer, SQLite please.",
        "Here is a first sketch.\n\n### Tables\n\n- `notes(id, title, body, updated_at)`\n"
        "- `tags(note_id, tag)`, indexed on `tag`\n\n```python\n"
        "def save(db, note):\n    db.execute(\n"
        '        "INSERT INTO notes VALUES (?, ?, ?, ?)",\n'
        "        (note.id, note.title, note.body, note.updated_at),\n    )\n```\n\n"
        "The full schema, with the indexes the list and tag views need:\n\n```sql\n"
        + "\n".join(
            f"CREATE TABLE IF NOT EXISTS {name} (id TEXT PRIMARY KEY, note_id TEXT, "
            f"value TEXT, updated_at TEXT);\nCREATE INDEX IF NOT EXISTS {name}_by_note "
            f"ON {name}(note_id, updated_at);"
            for name in ("attachments", "links", "reminders", "revisions", "checklists")
        )
        + "\n```\n",
    ),
    (
        "Add full-text search. Titles must rank higher than bodies.",
        "Use an **FTS5** table with column weights: `bm25(notes_fts, 10.0, 1.0)` ranks a "
        "title hit ten times a body hit. Triggers keep it in step with `notes`.",
    ),
    (
        "How do we sync between devices without a server?",
        "Two good options:\n\n1. **CRDT** per note (e.g. Automerge): merges without "
        "conflicts, costs memory.\n2. **Last-writer-wins** per field with a hybrid logical "
        "clock: simple, loses concurrent edits to the same field.\n\nFor notes, (2) is "
        "usually enough.",
    ),
    (
        "Go with last-writer-wins. What changes in the schema?",
        "Each synced field gets a timestamp column: `title_hlc`, `body_hlc`. A merge keeps, "
        "per field, the value with the larger clock.",
    ),
]


# A summary in the shape the structured strategy requires, short like a real one.
SUMMARY = """## Active Task
Design the storage layer of a notes app on SQLite.

## Key Decisions & Rationale
- Tables `notes(id, title, body, updated_at)` and `tags(note_id, tag)`.
- Full-text search with FTS5; `bm25(notes_fts, 10.0, 1.0)` ranks titles above bodies.

## Files & Artifacts
- `save(db, note)`: inserts a note.

## Constraints & Requirements
- "Titles must rank higher than bodies." (the user, verbatim)

## Pending Items
- Sync between devices without a server.

## Session Narrative
The user asked for a SQLite sketch, then for ranked full-text search.
"""


@pytest.fixture
def dark_page(browser: Browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="dark")
    page = context.new_page()
    yield page
    context.close()


def build_showcase(ui) -> None:
    ui.app.script.summaries = Reply(text=SUMMARY)
    for question, answer in TURNS:
        ui.app.script.add(Reply(text=answer))
        ui.send(question)
    ui.app.script.add(
        tool_step(call("getContextStats", {}), text="Let me check how much room is left."),
        Reply(text="About a tenth of the context is used, so there is plenty of room."),
    )
    ui.send("How full is your context now?")
    page = ui.page
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    expect(dialog.locator(".preview-messages")).to_be_visible()
    dialog.locator("#compact-instructions").fill("Keep the schema decisions verbatim.")
    dialog.locator("#compact-confirm").click()
    expect(dialog).to_be_hidden()
    line = page.locator(".fold-line.current")
    expect(line).to_be_visible()


def centre_fold_line(page) -> None:
    page.locator(".fold-line.current").evaluate("line => line.scrollIntoView({block: 'center'})")


def test_main_states_in_light_and_dark(ui, dark_page):
    ui.open()
    build_showcase(ui)
    page = ui.page
    page.locator(".notice .icon-button").evaluate_all("buttons => buttons.forEach(b => b.click())")
    centre_fold_line(page)
    # The pointer rests in the margin, so no message shows its hover actions.
    page.mouse.move(290, 640)
    expect(page.locator(".fold-line.current")).to_be_in_viewport()
    expect(page.locator(".message.folded").first).to_be_attached()
    folder = ui.shot("overview-light").parent

    page.locator(".fold-line.current .show-summary").click()
    expect(page.locator(".fold-summary")).to_be_visible()
    page.locator(".fold-summary").evaluate("panel => panel.scrollIntoView({block: 'start'})")
    ui.shot("summary-light")

    conversation_id = ui.app.api("GET", "/api/conversations")["items"][0]["id"]
    # A link can name the conversation to open: `#token=...&c=<id>`.
    dark_page.goto(f"{ui.app.url}/#token={ui.app.token}&c={conversation_id}")
    expect(dark_page.locator("#app")).to_have_attribute("data-state", "open")
    centre_fold_line(dark_page)
    light_background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    dark_background = dark_page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert light_background != dark_background
    dark_page.screenshot(path=str(folder / "overview-dark.png"))
